"""The project's own tiny "pretrained" base model: tokenizer, synthetic corpus, presets, training.

No weights can be downloaded, so a base checkpoint is made here the way a user would start from
one: a Llama-architecture decoder (random init) with a character-level `tokenizers` tokenizer,
trained by next-token cross-entropy (AdamW, warmup + cosine decay) on the completions of a
seeded, endless synthetic corpus, then saved with `save_pretrained` so that
`AutoModelForCausalLM.from_pretrained(DIR)` and `AutoTokenizer.from_pretrained(DIR)` load it.

Corpus (train-split instances only, so the test split stays held out):
- Countdown solutions: "3,7,25->46:" -> "25+3*7<eos>". The expression is drawn
  forward (random order, tree, operators), so an instance's completions follow the posterior
  over all of its solutions: several different correct solutions per instance.
- Off-target attempts (`off_target_frac`): a valid full-use expression whose value is not the
  prompt's target (the target is that of another expression on the same numbers). They give the
  base model headroom: it sometimes answers with a well-formed miss, as real base models do.
- Held-out arithmetic (`arithmetic_frac`): "47+58=" -> "105<eos>".
- A rare family (`rare_above`, `rare_ops`, `rare_keep`): Countdown solutions whose target is above
  `rare_above` or that use one of the operators in `rare_ops` (e.g. "/") are kept with probability
  `rare_keep` (the others are drawn again), so the corpus shows that family's worked solutions rarely.
  Meant to split the test set into a mostly-solved mass and a block of unsolved prompts, as a real base
  model's does: withholding "/" makes that block (the prompts only division solves); withholding a
  target range does not, the model generalizes across targets (docs/answer-budget.md).
The loss is on completion tokens (and EOS) only.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from escov.llm.device import resolve_device
from escov.llm.tasks import arithmetic, countdown

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
OFF_TARGET_TRIES = 50
# how a corpus example writes its worked Countdown solution: "random", the random expression it was drawn as
# (any order of the numbers, any tree); "canonical", the first (in sorted text) of its instance's distinct
# solutions outside the rare family, so that every instance is always answered by one text; "dominant", the canonical
# text with probability `dominant_share` and the random one otherwise (one dominant path per instance, rarer ones
# beside)
SOLUTION_FORMS = ("random", "canonical", "dominant")


@dataclass(frozen=True)
class Preset:
    """Model size and training schedule. hidden_size / num_heads (the head size) must be 32, 64, 80,
    96, 112, 128, ...: the head sizes vLLM's CPU attention supports."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    steps: int
    batch_size: int  # examples per step
    lr: float
    warmup_steps: int
    weight_decay: float = 0.1
    off_target_frac: float = 0.2  # share of countdown examples that are valid but off-target attempts
    arithmetic_frac: float = 0.2  # share of all examples that are held-out arithmetic
    max_position_embeddings: int = 256
    min_numbers: int = 3  # Countdown instances of the corpus have min_numbers to max_numbers numbers
    max_numbers: int = 4
    rare_above: int = 0  # Countdown targets above this form the rare family (0: no rare family)
    rare_ops: str = ""  # solutions using any of these operators ("+-*/") form the rare family too
    rare_keep: float = 1.0  # probability that a worked solution of the rare family is kept
    solution_form: str = (
        "random"  # a worked solution as drawn ("random"), its instance's "canonical" one, or "dominant"
    )
    dominant_share: float = 0.75  # under solution_form "dominant": probability that the canonical text is written

    def __post_init__(self):
        if not 0 <= self.rare_keep <= 1:
            raise ValueError(f"rare_keep must be in [0, 1], got {self.rare_keep}")
        if self.rare_above < 0:
            raise ValueError(f"rare_above must be >= 0 (0: no rare family), got {self.rare_above}")
        if not set(self.rare_ops) <= set("+-*/"):
            raise ValueError(f"rare_ops must be operators among '+-*/', got {self.rare_ops!r}")
        if not 0 <= self.dominant_share <= 1:
            raise ValueError(f"dominant_share must be in [0, 1], got {self.dominant_share}")
        if self.solution_form not in SOLUTION_FORMS:
            raise ValueError(f"solution_form must be one of {', '.join(SOLUTION_FORMS)}, got {self.solution_form!r}")


PRESETS = {
    # trains in seconds: learns the formats, rarely a correct Countdown answer; for tests
    "test": Preset(
        hidden_size=32,
        num_layers=2,
        num_heads=1,
        intermediate_size=64,
        steps=150,
        batch_size=64,
        lr=3e-3,
        warmup_steps=10,
    ),
    # for `paper_checks reproduce --budget small`: the default shape, a third of its training
    "small": Preset(
        hidden_size=64,
        num_layers=4,
        num_heads=2,
        intermediate_size=256,
        steps=550,
        batch_size=128,
        lr=3e-3,
        warmup_steps=50,
        off_target_frac=0.15,
        arithmetic_frac=0.25,
    ),
    # the smaller model of the small budget's population-size sweep
    "narrow": Preset(
        hidden_size=32,
        num_layers=4,
        num_heads=1,
        intermediate_size=128,
        steps=550,
        batch_size=128,
        lr=3e-3,
        warmup_steps=50,
        off_target_frac=0.15,
        arithmetic_frac=0.25,
    ),
    # the base model of the experiments (targets: docs/llm.md, "Tiny base model")
    "default": Preset(
        hidden_size=64,
        num_layers=4,
        num_heads=2,
        intermediate_size=256,
        steps=1600,
        batch_size=128,
        lr=3e-3,
        warmup_steps=100,
        off_target_frac=0.15,
        arithmetic_frac=0.25,
    ),
    # a base in the paper's regime (docs/answer-budget.md, "A base in the paper's regime": at T = 0.6 on the answer
    # budget's test prompts, Pass@1 0.33, Pass@32 0.84, no correct sample on 15% of prompts): the default's shape,
    # 3-number Countdown, no off-target attempts, no worked solution that divides (the prompts only division solves
    # become the never-solved block), and each instance always answered by the same text (its canonical solution)
    "paper": Preset(
        hidden_size=64,
        num_layers=4,
        num_heads=2,
        intermediate_size=256,
        steps=3200,
        batch_size=128,
        lr=3e-3,
        warmup_steps=100,
        off_target_frac=0.0,
        arithmetic_frac=0.1,
        max_numbers=3,
        rare_ops="/",
        rare_keep=0.0,
        solution_form="canonical",
    ),
}


def build_tokenizer():
    """Character-level tokenizer over printable ASCII (plus tab and newline), with pad/eos/unk."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = ["\t", "\n"] + [chr(c) for c in range(32, 127)]
    vocab = {tok: i for i, tok in enumerate([PAD, EOS, UNK] + chars)}
    core = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token=PAD, eos_token=EOS, unk_token=UNK, clean_up_tokenization_spaces=False
    )


def in_rare_family(target: int, solution: str, preset: Preset) -> bool:
    """Whether a worked Countdown solution (its target, its text) belongs to the preset's rare family."""
    return 0 < preset.rare_above < target or any(op in solution for op in preset.rare_ops)


def canonical_solution(numbers: list[int], target: int, preset: Preset) -> str:
    """The instance's one worked text: the first in sorted order of its distinct solutions
    (countdown.distinct_solutions) outside the preset's rare family, or of all of them when every one is rare
    (a rare solution the corpus kept)."""
    solutions = countdown.distinct_solutions(numbers, target)
    common = [text for text in solutions if not in_rare_family(target, text, preset)]
    return (common or solutions)[0]


def sample_example(
    rng: random.Random, preset: Preset, cd: countdown.Countdown, ar: arithmetic.Arithmetic
) -> tuple[str, str]:
    """(prompt, completion) drawn from the corpus mixture, train split only."""
    if rng.random() < preset.arithmetic_frac:
        question, result = ar.sample_question(rng, "train")
        return arithmetic.format_prompt(question), str(result)
    while True:
        numbers, text, target = cd.sample_expression(rng, "train")
        if not in_rare_family(target, text, preset) or rng.random() < preset.rare_keep:
            break
    if preset.solution_form == "canonical" or (
        preset.solution_form == "dominant" and rng.random() < preset.dominant_share
    ):
        text = canonical_solution(numbers, target, preset)
    if rng.random() < preset.off_target_frac:
        for _ in range(OFF_TARGET_TRIES):  # another reachable target on the same numbers
            drawn = countdown.random_expression(numbers, rng)
            if (
                drawn is not None
                and drawn[1].denominator == 1
                and 1 <= drawn[1] <= cd.max_target
                and drawn[1] != target
            ):
                target = int(drawn[1])
                break
    return countdown.format_prompt(numbers, target), text


def encode_batch(tokenizer, examples: list[tuple[str, str]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, labels), right-padded; labels are -100 except completion + EOS."""
    prompts = tokenizer([p for p, _ in examples], add_special_tokens=False)["input_ids"]
    answers = tokenizer([c for _, c in examples], add_special_tokens=False)["input_ids"]
    rows = [(p, a + [tokenizer.eos_token_id]) for p, a in zip(prompts, answers)]
    width = max(len(p) + len(a) for p, a in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (p, a) in enumerate(rows):
        ids[i, : len(p) + len(a)] = torch.tensor(p + a)
        labels[i, len(p) : len(p) + len(a)] = torch.tensor(a)
        mask[i, : len(p) + len(a)] = 1
    return ids, mask, labels


def build_model(preset: Preset, tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=preset.hidden_size,
        intermediate_size=preset.intermediate_size,
        num_hidden_layers=preset.num_layers,
        num_attention_heads=preset.num_heads,
        num_key_value_heads=preset.num_heads,
        max_position_embeddings=preset.max_position_embeddings,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    return LlamaForCausalLM(config)


def save_untrained_llama(
    out_dir, hidden_size: int, num_layers: int, intermediate_size: int, weight_scale: float = 10.0, seed: int = 0
) -> Path:
    """Save an untrained Llama with the project's tokenizer to out_dir and return the path (for vLLM tests
    and benchmarks, where training would only cost time).

    Head size 32 (num_heads = hidden_size / 32): vLLM's CPU attention needs a multiple of 32. Every 2-D
    weight is multiplied by weight_scale, so that the logits are sharp and greedy decoding is far from ties.
    """
    if isinstance(hidden_size, bool) or not isinstance(hidden_size, int) or hidden_size < 32 or hidden_size % 32:
        raise ValueError(f"hidden_size must be a positive multiple of 32 (head size 32), got {hidden_size!r}")
    tokenizer = build_tokenizer()
    torch.manual_seed(seed)
    shape = replace(
        PRESETS["test"],
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=hidden_size // 32,
        intermediate_size=intermediate_size,
    )
    model = build_model(shape, tokenizer)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(weight_scale)
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def lr_at(step: int, preset: Preset) -> float:
    """Linear warmup to lr, then cosine decay to lr / 10."""
    if step < preset.warmup_steps:
        return preset.lr * (step + 1) / preset.warmup_steps
    progress = (step - preset.warmup_steps) / max(1, preset.steps - preset.warmup_steps)
    return preset.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * progress)))


def preset_with(name: str, overrides: dict[str, str] | None = None) -> Preset:
    """The preset called name with some fields replaced: overrides maps a field name to its value as
    text ("steps": "3200"), converted to the field's type (the `--set FIELD=VALUE` of `llm pretrain`)."""
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
    base = PRESETS[name]
    changed = {}
    for field_name, text in (overrides or {}).items():
        if not hasattr(base, field_name):
            raise ValueError(f"--set {field_name}: no such preset field; fields: {', '.join(asdict(base))}")
        kind = type(getattr(base, field_name))
        try:
            changed[field_name] = kind(text)
        except ValueError:
            raise ValueError(f"--set {field_name}={text}: expected {kind.__name__}") from None
    return replace(base, **changed)


def pretrain(
    out_dir,
    preset: str = "default",
    seed: int = 0,
    progress: bool = True,
    threads: int | None = None,
    device: str = "cpu",
    overrides: dict[str, str] | None = None,
) -> dict:
    """Train a preset from random init and save it (model, tokenizer, pretrain.json, loss.png) to out_dir.

    overrides: preset fields replaced for this run (`preset_with`); pretrain.json records the
    settings used, under "config", and the overrides, under "overrides".

    threads: torch CPU threads while training (restored afterwards); None keeps the current setting.
    On a shared or small CPU one thread is often faster than two. device: "auto", "cpu", "cuda" or
    "cuda:N" (llm/device.py); a CUDA run gives another model than a CPU run with the same seed.
    """
    cfg = preset_with(preset, overrides)
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    device = resolve_device(device, "--device")
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads or previous_threads)
    try:
        return _train(Path(out_dir), preset, cfg, dict(overrides or {}), seed, progress, torch.device(device))
    finally:
        torch.set_num_threads(previous_threads)


def _train(
    out: Path, preset: str, cfg: Preset, overrides: dict[str, str], seed: int, progress: bool, device: torch.device
) -> dict:
    torch.manual_seed(seed)
    rng = random.Random(f"pretrain/{seed}")
    tokenizer = build_tokenizer()
    model = build_model(cfg, tokenizer).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=cfg.weight_decay)
    cd, ar = countdown.Countdown(min_numbers=cfg.min_numbers, max_numbers=cfg.max_numbers), arithmetic.Arithmetic()
    losses, tokens, start = [], 0, time.perf_counter()
    bar = tqdm(range(cfg.steps), desc=f"pretrain {preset}", disable=not progress, unit="step")
    for step in bar:
        ids, mask, labels = (
            t.to(device)
            for t in encode_batch(tokenizer, [sample_example(rng, cfg, cd, ar) for _ in range(cfg.batch_size)])
        )
        logits = model(input_ids=ids, attention_mask=mask).logits
        loss = F.cross_entropy(
            logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100
        )
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        tokens += int(mask.sum())
        losses.append(loss.item())
        if step % 20 == 0 or step == cfg.steps - 1:
            bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
    seconds = time.perf_counter() - start
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.to("cpu").save_pretrained(out)
    tokenizer.save_pretrained(out)
    n_params = sum(p.numel() for p in model.parameters())
    stats = {
        "preset": preset,
        "overrides": overrides,
        "config": asdict(cfg),
        "seed": seed,
        "device": str(device),
        "parameters": n_params,
        "train_seconds": round(seconds, 2),
        "tokens_per_second": round(tokens / seconds, 1),
        "final_loss": sum(losses[-50:]) / len(losses[-50:]),
        "loss": losses,
    }
    (out / "pretrain.json").write_text(json.dumps(stats, indent=1))
    _plot_loss(losses, out / "loss.png", f"pretrain {preset}: {n_params / 1e6:.2f}M parameters")
    return stats


def _plot_loss(losses: list[float], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(losses, lw=0.8)
    ax.set(xlabel="step", ylabel="cross-entropy (completion tokens)", title=title, yscale="log")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------- command line


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, help="directory to save the model in")
    parser.add_argument("--preset", default="default", choices=sorted(PRESETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: fastest for this tiny model on a small or shared CPU)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        dest="overrides",
        help="replace a preset field for this run, e.g. --set steps=3200 (repeatable; "
        "pretrain.json records the settings used)",
    )
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--device", default="auto", help="auto (CUDA when available) | cpu | cuda | cuda:N")


def parse_overrides(items: list[str]) -> dict[str, str]:
    """{"steps": "3200"} from ["steps=3200"]; a one-line error for an item without "="."""
    out = {}
    for item in items:
        field_name, sep, value = item.partition("=")
        if not sep or not field_name.strip():
            raise ValueError(f"--set takes FIELD=VALUE, got {item!r}")
        out[field_name.strip()] = value.strip()
    return out


def run_command(args) -> int:
    stats = pretrain(
        args.out,
        preset=args.preset,
        seed=args.seed,
        progress=not args.no_progress,
        threads=args.threads,
        device=args.device,
        overrides=parse_overrides(args.overrides),
    )
    print(
        f"{args.preset}: {stats['parameters']:,} parameters, {stats['train_seconds']:.0f} s, "
        f"{stats['tokens_per_second']:,.0f} tokens/s, final loss {stats['final_loss']:.3f}; saved to {args.out}"
    )
    return 0
