"""Planted strategies: the tiny base model's corpus on grid_paths or subset_sum, one strategy dominant, one rare.

A preset with `corpus_task` "grid_paths" or "subset_sum" (llm/tinymodel.py) trains on that task's train split
instead of Countdown (held-out arithmetic still makes up `arithmetic_frac` of the examples). Each instance's
correct solutions are enumerated exactly and split by the task's two planted strategies (llm/tasks/grid_paths.py:
the first move horizontal = dominant, vertical = rare; llm/tasks/subset_sum.py: contains the largest number =
dominant, not = rare). The worked solution of an example is drawn as follows:

- an instance that some dominant solution solves: with probability `rare_share` a uniformly drawn rare solution
  when it has one, else a uniformly drawn dominant solution (so `rare_share` is the rare strategy's share of the
  worked solutions on instances both strategies solve);
- a rare-only instance (no dominant solution): kept with probability `rare_keep` (else another instance is drawn),
  its worked solution a uniformly drawn rare one.

So the base sees the rare strategy rarely but does see it, and the rare-only prompts of the held-out splits stay
reachable. A subset sum solution is written largest number first ("12,9"): the first number written is the
strategy's choice, as a grid path's first move is.

    python -m escov.llm pretrain-planted --preset grid_paths --out DIR [--set rare_share=0.05 --set steps=800]

The model, tokenizer and schedule are llm/tinymodel.py's (a `Preset` for the shape, `lr_at`, `encode_batch`); the
loop lives here, beside that of `llm pretrain`, so that the Countdown bases' cache key (which hashes tinymodel.py's
code; paper_checks/reproduce/bases.py) is unchanged by the planted corpora.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from escov.llm.tasks import arithmetic, grid_paths, subset_sum

PLANTED_TASKS = ("grid_paths", "subset_sum")


@dataclass(frozen=True)
class PlantedCorpus:
    """The corpus of a planted base: its task and how rare the rare strategy is (module docstring)."""

    corpus_task: str
    rare_share: float = 0.1  # the rare strategy's share of worked solutions on instances both strategies solve
    rare_keep: float = 0.3  # probability that an instance only the rare strategy solves is kept
    arithmetic_frac: float = 0.1  # share of examples that are held-out arithmetic (the forgetting probe)

    def __post_init__(self):
        if self.corpus_task not in PLANTED_TASKS:
            raise ValueError(f"corpus_task must be one of {', '.join(PLANTED_TASKS)}, got {self.corpus_task!r}")
        for name in ("rare_share", "rare_keep", "arithmetic_frac"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")


# name -> (the model's shape and schedule: a tinymodel preset with fields replaced, the corpus); a first look at the
# smallest sensible size (docs/llm.md, "Planted strategies"), not a recipe chosen on validation
PLANTED_PRESETS = {
    "grid_paths": (("small", {"steps": 700, "batch_size": 64, "warmup_steps": 40}), PlantedCorpus("grid_paths")),
    "subset_sum": (("small", {"steps": 700, "batch_size": 64, "warmup_steps": 40}), PlantedCorpus("subset_sum")),
}


def planted_task(name: str):
    """The task (default settings) whose train split a planted corpus is drawn from."""
    if name == "grid_paths":
        return grid_paths.GridPaths()
    if name == "subset_sum":
        return subset_sum.SubsetSum()
    raise ValueError(f"corpus_task must be countdown or one of {', '.join(PLANTED_TASKS)}, got {name!r}")


def subset_text(chosen) -> str:
    """How the corpus writes a chosen multiset: largest first, joined by ","."""
    return ",".join(map(str, sorted(chosen, reverse=True)))


def solutions_by_strategy(task, rng: random.Random, split: str = "train") -> tuple[str, list[str], list[str]]:
    """(prompt, dominant solution texts, rare solution texts) of a random instance of the split."""
    if isinstance(task, grid_paths.GridPaths):
        grid = task.sample_grid(rng, split)
        paths = grid_paths.shortest_paths(grid)
        return (
            grid_paths.format_prompt(grid),
            [p for p in paths if grid_paths.strategy(p) == "dominant"],
            [p for p in paths if grid_paths.strategy(p) == "rare"],
        )
    numbers, target = task.sample_instance(rng, split)
    chosen = subset_sum.solutions(numbers, target)
    return (
        subset_sum.format_prompt(numbers, target),
        [subset_text(c) for c in chosen if subset_sum.strategy(numbers, c) == "dominant"],
        [subset_text(c) for c in chosen if subset_sum.strategy(numbers, c) == "rare"],
    )


def sample_planted_example(rng: random.Random, preset, task, ar: arithmetic.Arithmetic) -> tuple[str, str]:
    """(prompt, completion) drawn from a planted corpus (module docstring), train split only."""
    if rng.random() < preset.arithmetic_frac:
        question, result = ar.sample_question(rng, "train")
        return arithmetic.format_prompt(question), str(result)
    while True:
        prompt, dominant, rare = solutions_by_strategy(task, rng)
        if dominant:
            return prompt, rng.choice(rare if rare and rng.random() < preset.rare_share else dominant)
        if rng.random() < preset.rare_keep:
            return prompt, rng.choice(rare)


def planted_settings(name: str, overrides: dict[str, str] | None = None):
    """(tinymodel Preset, PlantedCorpus) of a planted preset with `--set FIELD=VALUE` overrides applied (a field of
    either; its value converted to the field's type)."""
    from escov.llm.tinymodel import preset_with

    if name not in PLANTED_PRESETS:
        raise ValueError(f"preset must be one of {sorted(PLANTED_PRESETS)}, got {name!r}")
    (shape_name, shape_fields), corpus = PLANTED_PRESETS[name]
    corpus_fields = {f.name: f.type for f in fields(PlantedCorpus)}
    shape_over = {k: str(v) for k, v in shape_fields.items()}
    changed = {}
    for field_name, text in (overrides or {}).items():
        if field_name in corpus_fields:
            kind = type(getattr(corpus, field_name))
            try:
                changed[field_name] = kind(text)
            except ValueError:
                raise ValueError(f"--set {field_name}={text}: expected {kind.__name__}") from None
        else:
            shape_over[field_name] = text
    return preset_with(shape_name, shape_over), replace(corpus, **changed)


def pretrain_planted(
    out_dir,
    preset: str,
    seed: int = 0,
    progress: bool = True,
    threads: int = 1,
    overrides: dict[str, str] | None = None,
) -> dict:
    """Train a planted base from random init on CPU and save it (model, tokenizer, pretrain.json, loss.png)."""
    import torch
    import torch.nn.functional as F
    from tqdm import tqdm

    from escov.llm.tinymodel import _plot_loss, build_model, build_tokenizer, encode_batch, lr_at

    shape, corpus = planted_settings(preset, overrides)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(seed)
        rng = random.Random(f"pretrain-planted/{seed}")
        tokenizer = build_tokenizer()
        model = build_model(shape, tokenizer)
        model.train()
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=shape.lr, betas=(0.9, 0.95), weight_decay=shape.weight_decay
        )
        task, ar = planted_task(corpus.corpus_task), arithmetic.Arithmetic()
        losses, start = [], time.perf_counter()
        for step in tqdm(range(shape.steps), desc=f"pretrain-planted {preset}", disable=not progress, unit="step"):
            ids, mask, labels = encode_batch(
                tokenizer, [sample_planted_example(rng, corpus, task, ar) for _ in range(shape.batch_size)]
            )
            logits = model(input_ids=ids, attention_mask=mask).logits
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100
            )
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, shape)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
    finally:
        torch.set_num_threads(previous_threads)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    n_params = sum(p.numel() for p in model.parameters())
    stats = {
        "preset": preset,
        "planted": True,
        "overrides": dict(overrides or {}),
        "config": asdict(shape),
        "corpus": asdict(corpus),
        "seed": seed,
        "parameters": n_params,
        "train_seconds": round(time.perf_counter() - start, 2),
        "final_loss": sum(losses[-50:]) / len(losses[-50:]),
        "loss": losses,
    }
    (out / "pretrain.json").write_text(json.dumps(stats, indent=1))
    _plot_loss(losses, out / "loss.png", f"pretrain-planted {preset}: {n_params / 1e6:.2f}M parameters")
    return stats


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, help="directory to save the model in")
    parser.add_argument("--preset", required=True, choices=sorted(PLANTED_PRESETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        dest="overrides",
        help="replace a shape field (llm pretrain's) or a corpus field (rare_share, rare_keep, "
        "arithmetic_frac) for this run (repeatable; pretrain.json records them)",
    )
    parser.add_argument("--no-progress", action="store_true")


def run_command(args) -> int:
    from escov.llm.cli import progress_enabled
    from escov.llm.tinymodel import parse_overrides

    stats = pretrain_planted(
        args.out,
        args.preset,
        seed=args.seed,
        progress=progress_enabled(args.no_progress),
        threads=args.threads,
        overrides=parse_overrides(args.overrides),
    )
    print(
        f"{args.preset}: {stats['parameters']:,} parameters, {stats['train_seconds']:.0f} s, "
        f"final loss {stats['final_loss']:.3f}; saved to {args.out}"
    )
    return 0
