"""The measurement of Lemma 1 as stated on the real tiny model, with one-token completions, where everything it
estimates can be enumerated over the vocabulary: tr I_x = sum_v pi(v) ||grad log pi(v | x)||^2 (one backward pass
per token), each population's JSpol_N (the generalized JS of its members' next-token distributions, computed here
from the members' weights), and each population's own Q along its directions."""

import hashlib
import math

import numpy as np
import pytest

from escov.paper_checks.lemma_as_stated import lemma_as_stated_record
from escov.paper_checks.reproduce.lemma_as_stated_measurement import StatedDesign, measure_lemma_as_stated
from escov.theory.metrics import generalized_js

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SIGMA, MEMBERS, POPULATIONS, TEMPERATURE = 3e-3, 3, 2, 0.7
DESIGN = StatedDesign(
    cells=((SIGMA, MEMBERS, POPULATIONS),),
    prompts=1,
    samples=2,
    trace_completions=300,
    gram_completions=3,
    gram_cells=((SIGMA, MEMBERS),),
    es_arm=(SIGMA, MEMBERS),
)


def coin(prompts, completions, **kwargs):
    """A reward (TRL's contract) that marks about half the completions correct by a bit of their text's hash."""
    return [float(hashlib.blake2b(c.encode(), digest_size=1).digest()[0] & 1) for c in completions]


def _enumerated(model_dir, task, measurement):
    """Per token v of the vocabulary at the probe prompt: pi(v) and grad log pi(v | x) (flattened); each population's
    members' next-token distributions from their weights."""
    import torch

    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import population_direction
    from escov.llm.rollout import derive_seed

    engine = HFEngine(model_dir)
    try:
        model = engine.model
        prompt = engine.prompt_token_ids(task.problems("test", 1, seed=0)[0].prompt)
        names = [n for n, _ in model.named_parameters()]
        center = {n: p.detach().float().clone() for n, p in model.named_parameters()}

        def next_logp():
            return torch.log_softmax(model(input_ids=torch.tensor([prompt])).logits[0, -1].double() / TEMPERATURE, -1)

        logp = next_logp()
        grads = []
        for v in range(logp.numel()):
            g = torch.autograd.grad(logp[v], list(model.parameters()), retain_graph=True, allow_unused=True)
            grads.append(
                torch.cat(
                    [
                        (x if x is not None else torch.zeros_like(p)).double().reshape(-1)
                        for x, p in zip(g, model.parameters())
                    ]
                )
            )
        pi = logp.detach().exp().numpy()
        grad = torch.stack(grads).numpy()  # [V, params]
        populations = []
        for d in range(POPULATIONS):
            seed = derive_seed(0, "as-stated", SIGMA, MEMBERS, d) % 2**31
            dirs = [population_direction(center, seed, 0, j) for j in range(MEMBERS)]
            members = []
            for eps in dirs:
                with torch.no_grad():
                    for n, p in model.named_parameters():
                        p.copy_(center[n] + SIGMA * eps[n])
                    members.append(next_logp().exp().numpy())
            with torch.no_grad():
                for n, p in model.named_parameters():
                    p.copy_(center[n])
            flat = np.stack([torch.cat([e[n].double().reshape(-1) for n in names]).numpy() for e in dirs])
            populations.append({"members": np.stack(members), "directions": flat})
        return pi, grad, populations
    finally:
        engine.close()


@pytest.fixture(scope="module")
def measured(tiny_model_dir, tmp_path_factory):
    from escov.llm.tasks import get_task

    task = get_task("countdown3", reward_function=coin, correct_reward="coin")
    out = tmp_path_factory.mktemp("as-stated") / "m.json"
    settings = {"task": task, "task_name": "coin countdown", "temperature": TEMPERATURE, "max_new_tokens": 1}
    m = measure_lemma_as_stated(tiny_model_dir, settings, DESIGN, out, progress=False)
    return {"m": m, "file": out, "exact": _enumerated(tiny_model_dir, task, m)}


def test_the_measurement_against_enumeration(measured):
    import json

    m = measured["m"]
    pi, grad, populations = measured["exact"]
    assert json.loads(measured["file"].read_text()) == json.loads(json.dumps(m))  # what was written is returned
    assert m["settings"]["task"] == "coin countdown" and m["es_arm"] == {"sigma": SIGMA, "members": MEMBERS}
    # tr I: every completion's value is one token's ||grad log pi(v | x)||^2, their mean covers the enumerated trace
    norms = (grad**2).sum(axis=1)
    exact = float(pi @ norms)
    (values,) = m["trace_per_completion"]
    assert len(values) == DESIGN.trace_completions
    assert all(np.isclose(norms, v, rtol=1e-4).any() for v in values)
    record = lemma_as_stated_record(m)
    t = record["trace"]
    assert abs(t["trace"] - exact) <= 4 * t["se"] and t["se"] < 0.2 * exact
    # JSpol_N of each population: the generalized JS of its members' next-token distributions (one position, every
    # token averaged exactly, so no sampling)
    (row,) = m["rows"]
    js = [generalized_js(p["members"]) for p in populations]
    assert np.array(row["jspol"])[:, 0] == pytest.approx(js, rel=1e-4)
    assert min(js) > 0 and abs(js[0] - js[1]) > 1e-3 * max(js)  # independent populations differ
    # each population's own Q along its directions: (sigma^2/2)(1/N) sum_j d_j^T I d_j with I enumerated; one-token
    # completions share the context, so every completion gives the same value
    fisher_dirs = [(p["directions"] @ grad.T) for p in populations]  # [N, V]: d_j . grad log pi(v)
    for q, p, fd in zip(row["q_per_completion"], populations, fisher_dirs):
        centred = fd - fd.mean(axis=0)
        expected = 0.5 * SIGMA**2 * float((centred**2 @ pi).sum()) / MEMBERS
        assert np.array(q[0]) == pytest.approx([expected] * DESIGN.gram_completions, rel=1e-4)
    # the record's row reads these: the ratio of the mean JSpol to (sigma^2/2)(1 - 1/N) T
    (r,) = record["rows"]
    assert r["ratio"] == pytest.approx(np.mean(js) / (0.5 * SIGMA**2 * (1 - 1 / MEMBERS) * t["trace"]), rel=1e-4)
    assert record["es_arm"]["populations"] == POPULATIONS and math.isfinite(record["es_arm"]["jssucc"]["mean"])
    assert set(record["grid_estimator"]) == {f"{SIGMA:g}/{MEMBERS}"}


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"cells": ((1e-3, 1, 4),)}, "N >= 2"),
        ({"cells": ((1e-3, 2, 1),)}, ">= 2 populations"),
        ({"cells": ((1e-3, 2, 4),), "es_arm": (2e-3, 32)}, "is not one of the cells"),
        (
            {"cells": ((1e-3, 2, 4),), "gram_cells": ((1e-3, 2),), "gram_completions": 9, "trace_completions": 8},
            "gram_completions",
        ),
    ],
)
def test_bad_designs_are_refused_in_one_line(kwargs, words):
    with pytest.raises(ValueError, match=words):
        StatedDesign(**kwargs)


def test_the_relative_sd_of_a_populations_jspol_sizes_the_next_design():
    """Per cell: one population's JSpol_N is its mean over prompts; the relative sd is the sample sd (ddof 1) of those
    over the populations, divided by their mean (NaN without a positive mean); s is the mean of the populations'."""
    from escov.paper_checks.reproduce.lemma_as_stated_measurement import relative_sd_summary

    measurement = {
        "rows": [
            {"sigma": 1e-3, "members": 2, "jspol": [[1.0, 3.0], [2.0, 2.0], [4.0, 6.0]], "s": [0.1, 0.2, 0.3]},
            {"sigma": 2e-2, "members": 4, "jspol": [[0.0, 0.0], [0.0, 0.0]], "s": [0.5, 0.7]},
        ]
    }
    first, second = relative_sd_summary(measurement)
    means = [2.0, 2.0, 5.0]  # each population's mean over its two prompts
    sd = math.sqrt(sum((m - 3.0) ** 2 for m in means) / 2)
    assert first == pytest.approx({"sigma": 1e-3, "members": 2, "populations": 3, "relative_sd": sd / 3.0, "s": 0.2})
    assert second["populations"] == 2 and math.isnan(second["relative_sd"]) and second["s"] == pytest.approx(0.6)


def test_a_design_may_redraw_the_grid_estimator_from_every_trace_completion():
    """gram_completions may equal trace_completions (the grid estimator redrawn from all of them), not exceed them."""
    cells = ((1e-3, 2, 2),)
    assert (
        StatedDesign(cells=cells, trace_completions=8, gram_completions=8, gram_cells=((1e-3, 2),)).gram_completions
        == 8
    )
    with pytest.raises(ValueError, match="gram_completions must be <= trace_completions"):
        StatedDesign(cells=cells, trace_completions=8, gram_completions=9, gram_cells=((1e-3, 2),))


def test_each_prompts_readings_come_from_its_own_samples(tiny_model_dir, tmp_path):
    """Three prompts, two-token completions: each population's JSpol_N per prompt is the stratified mean of that
    prompt's chain-rule estimates, its `s` the mean over prompts of each prompt's validity estimate, its success
    diversity per prompt drawn with that prompt's null seed, its own Q per prompt from that prompt's first trace
    completions, and the trace's values per prompt those of its own completions: each recomputed here from the
    population's samples drawn again with the same seeds."""
    import torch

    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import (
        direction_gram,
        population_direction,
        population_samples,
        score_sq_norms,
        stratified_mean,
        success_diversity,
        validity_estimate,
    )
    from escov.llm.rollout import derive_seed, rollout
    from escov.llm.tasks import get_task

    task, members, per_prompt = get_task("countdown3", reward_function=coin, correct_reward="coin"), 3, 2
    design = StatedDesign(
        cells=((SIGMA, members, 2),),
        prompts=3,
        samples=2,
        trace_completions=3,
        gram_completions=per_prompt,
        gram_cells=((SIGMA, members),),
        es_arm=(SIGMA, members),
    )
    settings = {"task": task, "task_name": "coin", "temperature": TEMPERATURE, "max_new_tokens": 2}
    m = measure_lemma_as_stated(tiny_model_dir, settings, design, tmp_path / "m.json", progress=False)
    (row,) = m["rows"]

    engine = HFEngine(str(tiny_model_dir))
    try:
        problems = task.problems("test", 3, seed=0)
        center = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
        pad, prompt_ids = engine.tokenizer.pad_token_id, [engine.prompt_token_ids(p.prompt) for p in problems]
        outs = rollout(
            engine,
            task,
            problems,
            n=3,
            temperature=TEMPERATURE,
            max_new_tokens=2,
            seed=derive_seed(0, "as-stated-trace"),
            step=0,
        )
        completions = [[c.token_ids for c in outs.completions[i]] for i in range(3)]
        params = list(engine.model.parameters())
        for i in range(3):
            sq = score_sq_norms(engine.model, params, [prompt_ids[i]] * 3, completions[i], TEMPERATURE, pad)
            assert m["trace_per_completion"][i] == pytest.approx(sq.tolist(), rel=1e-5)
        mixed = 0
        for d in range(2):
            pop_seed = derive_seed(0, "as-stated", SIGMA, members, d) % 2**31
            logp, correct, chain = population_samples(
                engine=engine,
                scorer=engine.model,
                task=task,
                problems=problems,
                encode=engine.prompt_token_ids,
                pad_id=pad,
                center=center,
                temperature=TEMPERATURE,
                max_new_tokens=2,
                sigma=SIGMA,
                members=members,
                samples=2,
                seed=pop_seed,
                step=0,
            )
            assert row["jspol"][d] == pytest.approx([stratified_mean(chain[i])[0] for i in range(3)], rel=1e-6)
            validity = [validity_estimate(logp[i]) for i in range(3)]
            assert row["s"][d] == pytest.approx(np.mean(validity), rel=1e-6) != np.median(validity)
            for i in range(3):
                expected = success_diversity(correct[i], seed=derive_seed(pop_seed, "success-null", i))
                assert {k: row[k][d][i] for k in expected} == pytest.approx(expected)
                mixed += 0 < correct[i].mean() < 1
            directions = [population_direction(center, pop_seed, 0, j) for j in range(members)]
            centering = np.eye(members) - 1.0 / members
            for i in range(3):
                gram = direction_gram(
                    engine.model,
                    center,
                    [prompt_ids[i]] * per_prompt,
                    completions[i][:per_prompt],
                    directions,
                    TEMPERATURE,
                    pad,
                )
                q = 0.5 * SIGMA**2 * np.einsum("jk,klb,lj->b", centering, gram, centering) / members
                assert row["q_per_completion"][d][i] == pytest.approx(q.tolist(), rel=1e-4)
        assert mixed  # outcomes a success null can shuffle: its seed matters
        with torch.no_grad():  # the engine holds the center again
            assert all(torch.equal(p, center[n]) for n, p in engine.model.named_parameters())
    finally:
        engine.close()
