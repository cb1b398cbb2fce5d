"""How the Lemma 1 grid measures: measure_grid's rows on the tiny model against the same populations drawn and
scored again here, step by step, with every statistic computed by hand; and grid_row on per-draw values written
by hand (its keys, its statistics and their boundaries)."""

import contextlib
import hashlib
import io
import math

import numpy as np
import pytest
from scipy import stats as st

from escov.paper_checks.reproduce.lemma_grid_measurement import GridDesign, grid_row, measure_grid
from escov.theory.paper import LEMMA1_S_LIMIT

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SIGMA, MEMBERS, DRAWS = 3e-3, 3, 2  # at this sigma both draws' derive_seed has bit 31 set (pop_seed keeps 31 bits)
DESIGN = GridDesign(sigmas=(SIGMA,), members=(MEMBERS,), draws={MEMBERS: DRAWS}, prompts=1, samples=2, center_samples=2)
TEMPERATURE, MAX_NEW_TOKENS = 0.7, 5
BAR = "lemma 1 grid (antithetic pairs of populations)"

STATISTICS = {
    "measured",
    "measured_se",
    "predicted",
    "predicted_se",
    "ratio",
    "ratio_ci",
    "ratio_df",
    "ratio_se_log",
    "ratio_of_means",
    "ratio_sd",
    "ratios",
}
ROW_KEYS = {
    "sigma",
    "members",
    "draws",
    *STATISTICS,
    "s_measured",
    "s_ci",
    "s_predicted",
    "in_regime",
    "fisher_trace",
    "fisher_trace_se",
    "jssucc",
    "jspol_minus_jssucc",
    "dpi_share",
    "lemma2",
}
SETTINGS = {"task", "temperature", "max_new_tokens", "prompts", "samples", "center_samples"}


def coin(prompts, completions, trainer_state, **kwargs):
    """A reward function (TRL's contract) that marks about half the completions correct, by a bit of their text's
    hash, so that members' success rates differ (the tiny model rarely solves Countdown); it records the training
    step it is called at."""
    coin.steps.append(trainer_state.global_step)
    return [float(hashlib.blake2b(c.encode(), digest_size=1).digest()[0] & 1) for c in completions]


coin.steps = []


def _t_ci(values) -> list[float]:
    v = np.asarray(values, dtype=float)
    half = st.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return [v.mean() - half, v.mean() + half]


def _draws_by_hand(model_dir, task, seed=0) -> list[dict]:
    """The design's populations drawn and scored again with llm.lemma_measurements' parts: per draw (pop_seed =
    derive_seed(seed, sigma, N, draw) mod 2^31) the population theta + sigma eps_j and its twin theta - sigma eps_j,
    and the prediction Q from the gram of the members' directions on fresh center completions."""
    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import direction_gram, population_direction, population_samples, success_diversity
    from escov.llm.rollout import derive_seed, rollout

    engine = HFEngine(model_dir)
    try:
        problems = task.problems("test", DESIGN.prompts, seed=seed)
        center = {k: p.detach().float().clone() for k, p in engine.model.named_parameters()}
        draws = []
        for draw in range(DRAWS):
            pop_seed = derive_seed(seed, SIGMA, MEMBERS, draw) % 2**31
            pair = {}
            for sign in (1.0, -1.0):
                logp, correct, chain = population_samples(
                    engine=engine,
                    scorer=engine.model,
                    task=task,
                    problems=problems,
                    encode=engine.prompt_token_ids,
                    pad_id=engine.tokenizer.pad_token_id,
                    center=center,
                    sigma=SIGMA,
                    members=MEMBERS,
                    samples=DESIGN.samples,
                    temperature=TEMPERATURE,
                    max_new_tokens=MAX_NEW_TOKENS,
                    seed=pop_seed,
                    step=0,
                    sign=sign,
                )
                (lp,), (ok,), (ch,) = logp, correct, chain  # the one probe prompt
                log_r = np.stack([lp[j, :, MEMBERS] - lp[j, :, j] for j in range(MEMBERS)])  # log pi_0 / pi_j
                succ = success_diversity(ok, seed=derive_seed(pop_seed, "success-null", sign, 0))
                pair[sign] = {
                    "jspol": ch.mean(),
                    "s": float(np.mean(np.expm1(log_r) - log_r)),
                    "correct": ok,
                    **{k: succ[k] - succ[k + "_null"] for k in ("jssucc", "gap", "local")},
                }
            out = rollout(
                engine,
                task,
                problems,
                n=DESIGN.center_samples,
                temperature=TEMPERATURE,
                max_new_tokens=MAX_NEW_TOKENS,
                seed=derive_seed(pop_seed, "prediction-center"),
                step=0,
            )
            gram = direction_gram(
                engine.model,
                center,
                [engine.prompt_token_ids(problems[0].prompt)] * DESIGN.center_samples,
                [c.token_ids for c in out.completions[0]],
                [population_direction(center, pop_seed, 0, j) for j in range(MEMBERS)],
                TEMPERATURE,
                engine.tokenizer.pad_token_id,
            ).mean(axis=2)  # [j, k]: eps_j^T I eps_k
            centered = np.trace(gram) - gram.sum() / MEMBERS  # sum_j d_j^T I d_j, d_j = eps_j - eps_bar
            draws.append({"pair": pair, "q": 0.5 * SIGMA**2 * centered / MEMBERS, "trace": centered / (MEMBERS - 1)})
        return draws
    finally:
        engine.close()


@pytest.fixture(scope="module")
def measured(tiny_model_dir):
    """One small grid measured (default seed, progress bar on, stderr captured) and the same populations measured
    again by hand."""
    from escov.llm.tasks import get_task

    task = get_task("countdown3", reward_function=coin, correct_reward="coin")  # coin decides correct, not the verifier
    coin.steps.clear()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rows = measure_grid(
            tiny_model_dir,
            DESIGN,
            task=task,
            task_name="coin countdown",
            temperature=TEMPERATURE,
            max_new_tokens=MAX_NEW_TOKENS,
        )
    return {
        "rows": rows,
        "stderr": err.getvalue(),
        "steps": list(coin.steps),
        "hand": _draws_by_hand(tiny_model_dir, task),
    }


def test_the_row_is_the_populations_measured_by_hand(measured):
    """Everything read from the measurement sits in this one test: mutmut maps a module fixture's calls to the first
    test that sets it up, and runs only that test against a mutant of measure_grid."""
    (row,) = measured["rows"]
    assert set(row) == ROW_KEYS | SETTINGS
    assert {k: row[k] for k in SETTINGS | {"sigma", "members", "draws"}} == {
        "task": "coin countdown",
        "temperature": TEMPERATURE,
        "max_new_tokens": MAX_NEW_TOKENS,
        "prompts": 1,
        "samples": 2,
        "center_samples": 2,
        "sigma": SIGMA,
        "members": MEMBERS,
        "draws": DRAWS,
    }
    assert measured["steps"] and set(measured["steps"]) == {0}  # every completion scored at step 0 (the base)
    # the bar: its description and its total (one tick per draw), on stderr
    assert f"{BAR}: 100%" in measured["stderr"] and f"| {DRAWS}/{DRAWS} [" in measured["stderr"]
    hand = measured["hand"]
    # outcomes that differ between members (the success side and its permutation null are not trivially 0), and
    # the twin is its own population
    assert sum(0 < d["pair"][sign]["correct"].mean() < 1 for d in hand for sign in (1.0, -1.0)) >= 2
    assert all(d["pair"][1.0]["jspol"] != d["pair"][-1.0]["jspol"] for d in hand)
    js = np.array([(d["pair"][1.0]["jspol"] + d["pair"][-1.0]["jspol"]) / 2 for d in hand])
    q = np.array([d["q"] for d in hand])
    trace = np.array([d["trace"] for d in hand])
    s = np.array([(d["pair"][1.0]["s"] + d["pair"][-1.0]["s"]) / 2 for d in hand])
    per_pop = {
        k: np.array([[d["pair"][sign][k] for sign in (1.0, -1.0)] for d in hand])
        for k in ("jssucc", "gap", "local", "jspol")
    }
    assert row["ratios"] == pytest.approx((js / q).tolist(), rel=1e-6)
    assert row["measured"] == pytest.approx(js.mean(), rel=1e-6)
    assert row["predicted"] == pytest.approx(q.mean(), rel=1e-6)
    assert row["predicted_se"] == pytest.approx(q.std(ddof=1) / math.sqrt(DRAWS), rel=1e-6)
    assert row["fisher_trace"] == pytest.approx(trace.mean(), rel=1e-6)
    assert row["fisher_trace_se"] == pytest.approx(trace.std(ddof=1) / math.sqrt(DRAWS), rel=1e-6)
    # tr I's estimate and the prediction: Q = (sigma^2 / 2)(1 - 1/N) x (1/(N - 1)) sum_j d_j^T I d_j, draw by draw
    assert row["predicted"] == pytest.approx(0.5 * SIGMA**2 * (1 - 1 / MEMBERS) * row["fisher_trace"], rel=1e-9)
    assert row["s_measured"] == pytest.approx(s.mean(), rel=1e-6)
    assert row["s_ci"] == pytest.approx(_t_ci(s), rel=1e-6)
    assert row["in_regime"] == bool(s.mean() <= LEMMA1_S_LIMIT)
    assert row["s_predicted"] == pytest.approx(0.5 * SIGMA**2 * trace.mean(), rel=1e-6)
    jssucc = per_pop["jssucc"].mean(axis=1)
    assert row["jssucc"]["mean"] == pytest.approx(jssucc.mean(), abs=1e-12)
    assert row["jssucc"]["ci"] == pytest.approx(_t_ci(jssucc), abs=1e-12)
    assert row["jspol_minus_jssucc"]["ci"] == pytest.approx(_t_ci(js - jssucc), rel=1e-6)
    gap, local = per_pop["gap"].mean(axis=1), per_pop["local"].mean(axis=1)
    assert row["lemma2"]["gap"]["ci"] == pytest.approx(_t_ci(gap), abs=1e-12)
    assert row["lemma2"]["local"]["ci"] == pytest.approx(_t_ci(local), abs=1e-12)
    assert row["lemma2"]["gap_minus_local"]["ci"] == pytest.approx(_t_ci(gap - local), abs=1e-12)
    ok = (per_pop["jssucc"] >= 0) & (per_pop["jssucc"] <= per_pop["jspol"])
    assert row["dpi_share"] == pytest.approx(ok.mean())


def test_no_progress_bar_when_asked(tiny_model_dir):
    from escov.llm.tasks import get_task

    empty = GridDesign(sigmas=(SIGMA,), members=(MEMBERS,), draws={MEMBERS: DRAWS}, sigmas_of={MEMBERS: ()})  # no cell
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rows = measure_grid(
            tiny_model_dir,
            empty,
            task=get_task("countdown3"),
            task_name="countdown3",
            temperature=TEMPERATURE,
            max_new_tokens=MAX_NEW_TOKENS,
            progress=False,
        )
    assert rows == [] and BAR not in err.getvalue()


def _draw(jspol, predicted, trace, s, jssucc, jssucc_null, gap, gap_null, local, local_null) -> dict:
    return {
        k: np.array(v, dtype=float)
        for k, v in dict(
            jspol=jspol,
            predicted=predicted,
            fisher_trace=trace,
            s=s,
            jssucc=jssucc,
            jssucc_null=jssucc_null,
            gap=gap,
            gap_null=gap_null,
            local=local,
            local_null=local_null,
        ).items()
    }


# three draws, two signs x two prompts each; the corrected JSsucc (jssucc - null) holds the DPI's edge cases: exactly
# 0, exactly JSpol, between, negative, above JSpol, and positive but below 1
PER_DRAW = [
    _draw(
        [[0.25, 0.5], [0.375, 0.125]],
        [0.2, 0.4],
        [1000.0, 1500.0],
        [0.01, 0.03],
        [[0.25, 0.75], [0.5, 0.0]],
        [[0.25, 0.25], [0.25, 0.0625]],
        [[0.3, 0.2], [0.1, 0.4]],
        [[0.05, 0.02], [0.01, 0.1]],
        [[0.2, 0.1], [0.3, 0.05]],
        [[0.01, 0.02], [0.03, 0.04]],
    ),
    _draw(
        [[0.5, 0.75], [0.25, 0.5]],
        [0.3, 0.5],
        [1800.0, 2500.0],
        [0.02, 0.04],
        [[0.5, 1.0], [0.125, 0.25]],
        [[0.25, 0.125], [0.125, 0.5]],
        [[0.2, 0.6], [0.3, 0.1]],
        [[0.1, 0.2], [0.05, 0.02]],
        [[0.4, 0.3], [0.2, 0.1]],
        [[0.1, 0.05], [0.02, 0.01]],
    ),
    _draw(
        [[0.125, 0.25], [0.625, 0.375]],
        [0.35, 0.25],
        [2100.0, 1200.0],
        [0.06, 0.08],
        [[0.375, 0.0625], [0.75, 0.25]],
        [[0.25, 0.125], [0.125, 0.125]],
        [[0.5, 0.3], [0.2, 0.7]],
        [[0.3, 0.1], [0.1, 0.3]],
        [[0.1, 0.5], [0.6, 0.2]],
        [[0.05, 0.3], [0.1, 0.1]],
    ),
]


def test_grid_row_by_hand():
    sigma, n = 0.1, 4
    row = grid_row(PER_DRAW, sigma, n)
    assert set(row) == ROW_KEYS
    js = np.array([d["jspol"].mean() for d in PER_DRAW])
    q = np.array([d["predicted"].mean() for d in PER_DRAW])
    trace = np.array([d["fisher_trace"].mean() for d in PER_DRAW])
    s = np.array([d["s"].mean() for d in PER_DRAW])
    corrected = np.array([d["jssucc"] - d["jssucc_null"] for d in PER_DRAW])  # [draw, sign, prompt]
    jssucc = corrected.mean(axis=(1, 2))
    gap = np.array([(d["gap"] - d["gap_null"]).mean() for d in PER_DRAW])
    local = np.array([(d["local"] - d["local_null"]).mean() for d in PER_DRAW])
    log_r = np.log(js / q)
    half = st.t.ppf(0.975, 2) * log_r.std(ddof=1) / math.sqrt(3)
    ratio = math.exp(log_r.mean())
    assert (row["sigma"], row["members"], row["draws"]) == (sigma, n, 3)
    assert row["ratio"] == pytest.approx(ratio) and row["ratio_ci"] == pytest.approx(
        [ratio / math.exp(half), ratio * math.exp(half)]
    )
    assert row["measured"] == pytest.approx(js.mean()) and row["predicted"] == pytest.approx(q.mean())
    assert row["s_measured"] == pytest.approx(s.mean()) and row["s_ci"] == pytest.approx(_t_ci(s))
    assert row["in_regime"] is True  # mean s 0.04 <= 0.05
    assert row["fisher_trace"] == pytest.approx(trace.mean())
    assert row["fisher_trace_se"] == pytest.approx(trace.std(ddof=1) / math.sqrt(3))
    assert row["s_predicted"] == pytest.approx(0.5 * sigma**2 * trace.mean())
    assert row["jssucc"] == {"mean": pytest.approx(jssucc.mean()), "ci": pytest.approx(_t_ci(jssucc))}
    assert row["jspol_minus_jssucc"] == {
        "mean": pytest.approx((js - jssucc).mean()),
        "ci": pytest.approx(_t_ci(js - jssucc)),
    }
    assert row["lemma2"] == {
        "gap": {"mean": pytest.approx(gap.mean()), "ci": pytest.approx(_t_ci(gap))},
        "local": {"mean": pytest.approx(local.mean()), "ci": pytest.approx(_t_ci(local))},
        "gap_minus_local": {"mean": pytest.approx((gap - local).mean()), "ci": pytest.approx(_t_ci(gap - local))},
    }
    # data processing, population by population and prompt by prompt: 0 <= JSsucc <= JSpol, edges included
    jspol = np.array([d["jspol"] for d in PER_DRAW])
    inside = [[[0 <= c <= p for c, p in zip(cr, pr)] for cr, pr in zip(cd, pd)] for cd, pd in zip(corrected, jspol)]
    assert row["dpi_share"] == pytest.approx(np.mean(inside))
    assert row["dpi_share"] == pytest.approx(8 / 12)


def test_grid_row_counts_a_population_at_the_limit_of_s_in_the_regime():
    at_limit = [d | {"s": np.array([LEMMA1_S_LIMIT, LEMMA1_S_LIMIT])} for d in PER_DRAW[:2]]
    assert np.mean([d["s"].mean() for d in at_limit]) == LEMMA1_S_LIMIT
    assert grid_row(at_limit, 0.1, 4)["in_regime"] is True
    above = [d | {"s": np.array([LEMMA1_S_LIMIT, 2 * LEMMA1_S_LIMIT])} for d in PER_DRAW[:2]]
    assert grid_row(above, 0.1, 4)["in_regime"] is False
