"""The answer's arms beside its ES and GRPO runs (issue 49), as sizes: what `reproduce --budget answer` measures at
the endpoints, the ES null arm it runs, and the base draws and step-size control it reads the premise on.

    endpoints     at the base, GRPO's plateau (its last checkpoint) and ES's last checkpoint of every seed: Pass@k
                  to k = ENDPOINT_SAMPLES from that many samples per test prompt, at each of ENDPOINT_TEMPERATURES
                  (the paper's 0.6, and 1.0, where rarer paths are likelier); reproduce/endpoints.py
    null arm      ES with its noise replaced by standardized random normals (`es-null`, budgets.ES_VARIANTS) at the
                  answer's ES settings and length, on NULL_SEEDS: the answer's ES forgets held-out skill and drifts
                  exactly as a random walk of its step norm would; the arm tells whether the reward's direction
                  adds to either. 4 seeds: its readings are paired per seed with ES's (ES's drift read 0.1993-0.2001
                  across the published answer's 8 seeds; held-out Pass@1 is prompt-dominated), and each run costs as
                  much as an answer ES run, of which the 3-hour budget holds few (docs/answer-budget.md)
    base draws    the premise base pretrained again with other seeds (DRAW_SEEDS), each with the premise control on
                  validation prompts, and the control on the answer's base with GRPO at LR_CONTROL: is the premise
                  a property of one draw, or of one step size? reproduce/base_draws.py

Tests shrink every size (AnswerArms' fields); the answer's are ANSWER_ARMS.
"""

from __future__ import annotations

from dataclasses import dataclass

ENDPOINT_SAMPLES = 1024
ENDPOINT_TEMPERATURES = (0.6, 1.0)
# prompts per `llm evaluate` call at 1024 samples: 8 x 1024 completions of 32 tokens held at once (the evaluation's
# records of one call, tens of MB), each prompt generated as one batch of 1024 (evaluate.SAMPLES_PER_CALL)
ENDPOINT_CHUNK = 8
NULL_SEEDS = (0, 1, 2, 3)  # the answer's first 4 seeds (budgets.ANSWER_SEEDS)
DRAW_SEEDS = (1, 2)  # pretraining seeds of the other draws (the answer's base: seed 0)
LR_CONTROL = 3e-5  # the paper-regime answer's GRPO step, a third of the control's 1e-4


@dataclass(frozen=True)
class AnswerArms:
    """Sizes of the answer's arms. control: run_control's keyword sizes for the base draws' and the step-size
    control (seeds, steps, problems, curve, checkpoint_every) as (name, value) pairs; () keeps its defaults."""

    endpoint_samples: int = ENDPOINT_SAMPLES
    endpoint_temperatures: tuple[float, ...] = ENDPOINT_TEMPERATURES
    endpoint_chunk: int = ENDPOINT_CHUNK
    null_seeds: tuple[int, ...] = NULL_SEEDS
    draw_seeds: tuple[int, ...] = DRAW_SEEDS
    lr_control: float | None = LR_CONTROL  # None: no step-size control
    control: tuple = ()


ANSWER_ARMS = AnswerArms()
