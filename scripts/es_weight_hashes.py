"""sha256 of the final weights of short ES runs, one per member-evaluation strategy and option.

    PYTHONPATH=. .venv/bin/python scripts/es_weight_hashes.py --write hashes.json   (before a change)
    PYTHONPATH=. .venv/bin/python scripts/es_weight_hashes.py --check hashes.json   (after it)

ES on a CPU is deterministic: the same settings on the same machine give the same weights to the
last bit. A change that only moves code (who derives the seeds, which class holds the update) must
leave every run below bit-identical, so published runs stay valid. Each variant is a short
`python -m escov.llm train` (a budget of 3 GRPO steps: 12 ES steps; 4 prompts, 8 members) on the tiny "test" model,
in its own process;
the hash covers every tensor of the last checkpoint, by name. Hashes depend on the machine (its
torch build and CPU), so record them on the machine that checks them; scripts/es_weight_hashes.json
holds those of the 2-core development CPU since ES reads its noise from a table (llm/es/noise.py), which
changed every run's noise: plain, batched and Ray still give one hash, as do each option's strategies.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMON = [
    "--config",
    str(ROOT / "configs" / "tiny-countdown-es.toml"),
    "--steps",
    "3",
    "--batch_size",
    "4",
    "--es.population_size",
    "8",
    "--format_reward",
    "0.5",
    "--es.sigma",
    "0.05",
    "--threads",
    "1",
    "--max_completion_length",
    "8",
    "--eval_problems",
    "2",
    "--eval_samples",
    "2",
    "--eval_ks",
    "1",
    "--heldout_task",
    "",
    "--threshold_keep",
    "50",
    "--probe_prompts",
    "1",
    "--probe_members",
    "2",
    "--probe_samples",
    "2",
    "--probe_center_samples",
    "2",
    "--step_samples",
    "2",
    "--train_pool",
    "16",
]
SAMPLED = ["--es.member_temperature", "1.0", "--es.member_samples", "2"]
VARIANTS = {  # the config runs batched; "plain" is the paper's member-by-member loop
    "plain": ["--population.batched", "false"],
    "batched": [],
    "ray": ["--population.batched", "false", "--workers", "2"],
    "lowrank": ["--population.batched", "false", "--population.noise_rank", "2"],
    "lowrank-batched": ["--population.noise_rank", "2"],
    "antithetic": ["--population.batched", "false", "--es.antithetic", "true"],
    "antithetic-batched": ["--es.antithetic", "true"],
    "bf16": ["--population.batched", "false", "--es.inplace_bf16", "true", "--dtype", "bfloat16"],
    "sampled": ["--population.batched", "false", *SAMPLED],
    "sampled-batched": SAMPLED,
    "sampled-ray": ["--population.batched", "false", "--workers", "2", *SAMPLED],
    "null-control": ["--population.batched", "false", "--es.null_control", "true"],
}


def weights_hash(checkpoint: Path) -> str:
    """sha256 over (name, dtype, shape, bytes) of every tensor of a checkpoint, names sorted."""
    from safetensors.torch import load_file

    tensors = load_file(checkpoint / "model.safetensors")
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(-1).view(dtype=__import__("torch").uint8).numpy().tobytes())
    return h.hexdigest()


def run_variant(model: Path, out: Path, flags: list[str]) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "escov.llm", "train", *COMMON, *flags, "--model", str(model), "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(flags)}: llm train failed:\n{proc.stderr[-2000:]}")
    last = max(int(p.name.removeprefix("step-")) for p in (out / "checkpoints").glob("step-*"))
    return weights_hash(out / "checkpoints" / f"step-{last}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", type=Path, help="record the hashes in this JSON file")
    mode.add_argument("--check", type=Path, help="compare with the hashes recorded in this JSON file")
    parser.add_argument("--only", default="", help="comma-separated variants (default: all)")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(VARIANTS)
    unknown = set(names) - set(VARIANTS)
    if unknown:
        parser.error(f"--only: unknown variants {sorted(unknown)}; known: {list(VARIANTS)}")
    from escov.llm.tinymodel import pretrain

    with tempfile.TemporaryDirectory(prefix="es-hashes-") as tmp:
        model = Path(tmp) / "model"
        pretrain(model, preset="test", seed=0, progress=False, threads=1)
        hashes = {}
        for name in names:
            hashes[name] = run_variant(model, Path(tmp) / name, VARIANTS[name])
            print(f"{name:20s} {hashes[name]}", flush=True)
    if args.write:
        args.write.write_text(json.dumps(hashes, indent=1) + "\n")
        return 0
    recorded = json.loads(args.check.read_text())
    differ = [n for n in names if recorded.get(n) != hashes[n]]
    for n in differ:
        print(f"DIFFERS {n}: recorded {recorded.get(n)}, now {hashes[n]}")
    print("all identical" if not differ else f"{len(differ)} of {len(names)} variants differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
