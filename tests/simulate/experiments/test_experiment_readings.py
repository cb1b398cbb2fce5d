"""The simulate level's readings, recomputed here from the runs each experiment made: every number its claims report
and every verdict, from the trajectories (simulate/train.py) and the claims' own tests (theory/claims.py), at a size
where some verdicts are decided. The runs are the experiment's own: its `train` is wrapped to keep what it returns
(the real function runs), so a reading of the wrong run, metric, step, sign or rule shows as a difference."""

from __future__ import annotations

import numpy as np
import pytest

from escov.simulate.experiments import entropy_collapse, passk_vs_base
from escov.simulate.experiments.common import decided, matched, matched_along
from escov.simulate.measure import DEFAULT_KS
from escov.theory.claims import BY_ID
from escov.theory.decisions import INCONCLUSIVE, combine

SEEDS, SCALE = 6, 0.2  # entropy collapse and GRPO's Pass@1 gain are decided here, and most shapes' Pass@K fall


def _recorded(monkeypatch, module):
    """Run the experiment, keeping each training run it made by its progress label or in call order."""
    runs = []

    def kept(task, phases, *args, **kwargs):
        run = real(task, phases, *args, **kwargs)
        runs.append((kwargs.get("desc"), phases, run))
        return run

    real = module.train
    monkeypatch.setattr(module, "train", kept)
    return module.run(seeds=SEEDS, scale=SCALE, progress=False), runs


def _by_id(result: dict) -> dict:
    return {c["id"]: c for c in result["claims"]}


def _mean(values) -> float:
    v = np.asarray(values, dtype=float)
    return float(v[np.isfinite(v)].mean())


def test_entropy_collapse_reports_what_its_runs_measured(monkeypatch):
    result, made = _recorded(monkeypatch, entropy_collapse)
    runs = {desc: run for desc, _, run in made}
    grpo, es, long, sampled = runs["grpo"], runs["es"], runs["es long"], runs["es long sampled"]
    steps = grpo.steps
    assert es.steps == steps and long.steps == sampled.steps == entropy_collapse.ES_LONG * steps
    assert sampled.phases != long.phases  # ES with sampled members: another member temperature
    base = grpo.policy
    for other in (es, long, sampled):  # one base policy
        assert np.array_equal(other.policy["pass@1"][0], base["pass@1"][0])
    claims = _by_id(result)

    collapse = claims["entropy_collapse"]
    fall = grpo.policy["entropy"][-1] - base["entropy"][0]
    es_change = es.policy["entropy"][-1] - base["entropy"][0]
    level = np.minimum(grpo.policy["pass@1"][-1], es.policy["pass@1"][-1])
    _, ent_g, ent_e = matched(grpo, es, "entropy")
    analogue = collapse["analogue"]
    assert analogue["entropy_change_grpo"]["mean"] == pytest.approx(fall.mean())
    assert analogue["entropy_change_es"]["mean"] == pytest.approx(es_change.mean())
    assert analogue["matched_pass1_gain"]["mean"] == pytest.approx((level - base["pass@1"][0]).mean())
    assert analogue["entropy_at_matched_grpo"]["mean"] == pytest.approx(_mean(ent_g))
    assert analogue["entropy_at_matched_es"]["mean"] == pytest.approx(_mean(ent_e))
    test = BY_ID["entropy_collapse"].simulate_test
    assert collapse["verdict"] == combine([decided(test, ent_e - ent_g)[0], decided(test, -fall)[0]]) == "holds"
    assert fall.mean() < 0  # GRPO's entropy fell: the verdict above reads a fall

    end = es.policy["pass@32"][-1] - grpo.policy["pass@32"][-1]
    above = claims["es_passk_above_grpo"]
    assert above["analogue"]["difference_es_minus_grpo_at_end"]["mean"] == pytest.approx(end.mean())
    assert above["verdict"] == decided(BY_ID["es_passk_above_grpo"].simulate_test, end)[0]

    frontier = claims["matched_passk_above_grpo"]
    lo, hi, along = matched_along(long, grpo, "pass@32")
    _, _, along_sampled = matched_along(sampled, grpo, "pass@32")
    _, p32_g, p32_e = matched(grpo, es, "pass@32")
    analogue = frontier["analogue"]
    assert analogue["range_lo"]["mean"] == pytest.approx(lo.mean()) and analogue["range_hi"]["mean"] == pytest.approx(
        hi.mean()
    )
    assert analogue["difference_es_minus_grpo_along_range"]["mean"] == pytest.approx(_mean(along))
    assert analogue["difference_sampled_es_minus_grpo_along_range"]["mean"] == pytest.approx(_mean(along_sampled))
    assert analogue["pass32_at_lower_final_grpo"]["mean"] == pytest.approx(_mean(p32_g))
    assert analogue["pass32_at_lower_final_es"]["mean"] == pytest.approx(_mean(p32_e))
    assert frontier["verdict"] == decided(BY_ID["matched_passk_above_grpo"].simulate_test, along)[0]
    assert _mean(along) != pytest.approx(_mean(along_sampled))  # the two ES runs differ: which one is read shows

    gain = grpo.policy["pass@1"][-1] - base["pass@1"][0]
    raises = claims["grpo_raises_pass1"]
    assert raises["analogue"]["pass@1_change_grpo"]["mean"] == pytest.approx(gain.mean())
    assert raises["verdict"] == decided(BY_ID["grpo_raises_pass1"].simulate_test, gain)[0] == "holds"

    endpoints = claims["endpoints"]["analogue"]
    assert set(endpoints) == {f"pass@{k}" for k in DEFAULT_KS}
    for k in DEFAULT_KS:
        for name, run in (("grpo", grpo), ("es", es)):
            assert endpoints[f"pass@{k}"][name]["mean"] == pytest.approx(run.policy[f"pass@{k}"][-1].mean())
        assert endpoints[f"pass@{k}"]["base"]["mean"] == pytest.approx(base[f"pass@{k}"][0].mean())


def test_passk_vs_base_reports_what_its_runs_measured_shape_by_shape(monkeypatch):
    result, made = _recorded(monkeypatch, passk_vs_base)
    labels = list(passk_vs_base.SHAPES)
    assert len(made) == 2 * len(labels)  # GRPO then ES on each shape, in the shapes' order
    below_rule, up_rule = BY_ID["grpo_passk_below_base"].simulate_test, BY_ID["es_improves_over_base"].simulate_test
    below_verdicts, up_verdicts, below_total, up_total, kept = {}, {}, 0, 0, 0
    for i, label in enumerate(labels):
        grpo, es = made[2 * i][2], made[2 * i + 1][2]
        assert np.array_equal(grpo.policy["pass@1"][0], es.policy["pass@1"][0])  # one base per shape
        change = {
            name: {k: run.policy[f"pass@{k}"][-1] - run.policy[f"pass@{k}"][0] for k in (1, 16, 32)}
            for name, run in (("grpo", grpo), ("es", es))
        }
        row = result["per_shape"][label]
        assert row["base_pass@1/16/32"] == pytest.approx([grpo.policy[f"pass@{k}"][0].mean() for k in (1, 16, 32)])
        for name in ("grpo", "es"):
            got = [s["mean"] for s in row[f"{name}_change_pass@1/16/32"]]
            assert got == pytest.approx([change[name][k].mean() for k in (1, 16, 32)]), (label, name)
        below = int(((change["grpo"][16] < 0) & (change["grpo"][32] < 0)).sum())
        up = int(((change["es"][1] > 0) & (change["es"][16] > 0) & (change["es"][32] > 0)).sum())
        assert row["grpo_below_base_on_16_and_32"] == f"{below}/{SEEDS}", label
        assert row["es_above_base_on_1_16_32"] == f"{up}/{SEEDS}", label
        # Pass@1 up with Pass@16 and Pass@32 kept within 0.001 of the base
        kept += int(((change["es"][1] > 0) & (change["es"][16] >= -1e-3) & (change["es"][32] >= -1e-3)).sum())
        below_total, up_total = below_total + below, up_total + up
        below_verdicts[label] = combine([decided(below_rule, change["grpo"][k])[0] for k in (16, 32)])
        up_verdicts[label] = combine([decided(up_rule, change["es"][k])[0] for k in (1, 16, 32)])
    claims = _by_id(result)
    total = SEEDS * len(labels)
    below_claim, up_claim = claims["grpo_passk_below_base"], claims["es_improves_over_base"]
    assert below_claim["analogue"]["count"] == f"{below_total}/{total}"
    assert below_claim["analogue"]["share"] == pytest.approx(below_total / total)
    assert up_claim["analogue"]["count_all_three_up"] == f"{up_total}/{total}"
    assert up_claim["analogue"]["count_pass1_up_rest_kept"] == f"{kept}/{total}" and kept != up_total
    assert below_claim["analogue"]["per_shape_verdict"] == below_verdicts
    assert up_claim["analogue"]["per_shape_verdict"] == up_verdicts
    for claim, verdicts in ((below_claim, below_verdicts), (up_claim, up_verdicts)):
        # one verdict when every shape gives it; shapes that disagree leave the claim undecided
        agreed = set(verdicts.values())
        assert claim["verdict"] == (agreed.pop() if len(agreed) == 1 else INCONCLUSIVE)
    assert len(set(below_verdicts.values())) > 1  # the shapes disagree at this size: the rule above is exercised


class _Trajectory:
    """A run's policy metrics by step (rows) and seed (columns), written by hand: what the readings read of a run."""

    def __init__(self, pass1: np.ndarray, entropy: np.ndarray, pass32_offset: float = 0.0):
        self.policy = {f"pass@{k}": pass1 + (pass32_offset if k > 1 else 0.0) for k in DEFAULT_KS}
        self.policy["entropy"] = entropy

    def final(self, name: str) -> np.ndarray:
        return self.policy[name][-1]


JITTER = 1e-3 * np.arange(6)  # per seed: the seeds differ a little, so an interval over them has a width
SWING = np.array([0.1, -0.1, 0.05, -0.05, 0.02, -0.02])  # per seed: a change of mean 0, undecided


def _rows(*values) -> np.ndarray:
    return np.array(values, dtype=float)[:, None] + JITTER[None, :]


def _last(per_seed: np.ndarray) -> np.ndarray:
    """A change of the last of 5 rows only."""
    return np.eye(5)[4][:, None] * per_seed[None, :]


def _synthetic(monkeypatch, runs: dict) -> dict:
    """entropy_collapse's readings of the hand-written runs (by the experiment's labels), at 4 updates."""
    monkeypatch.setattr(entropy_collapse, "train", lambda task, phases, **kw: runs[kw["desc"]])
    return _by_id(entropy_collapse.run(seeds=6, scale=0.04, progress=False))


def _long(start: float, end: float, offset: float = 0.0) -> _Trajectory:
    steps = entropy_collapse.ES_LONG * 4
    return _Trajectory(_rows(*np.linspace(start, end, steps + 1)), _rows(*[2.0] * (steps + 1)), offset)


def test_entropy_collapse_holds_only_when_grpos_entropy_falls_as_well(monkeypatch):
    """Known truth: GRPO's entropy dips where it passes ES's final Pass@1 (1.0 against ES's 2.0 there, so ES - GRPO at
    matched Pass@1 holds) and returns to its base by the end (its fall undecided): the claim, both parts, is
    undecided, not holding."""
    runs = {
        "grpo": _Trajectory(_rows(0.3, 0.5, 0.7, 0.8, 0.9), _rows(2.0, 1.5, 1.0, 1.5, 2.0) + _last(SWING)),
        "es": _Trajectory(_rows(0.3, 0.4, 0.5, 0.6, 0.7), _rows(2.0, 2.0, 2.0, 2.0, 2.0)),
        "es long": _long(0.3, 0.95),
        "es long sampled": _long(0.3, 0.95),
    }
    collapse = _synthetic(monkeypatch, runs)["entropy_collapse"]
    assert collapse["analogue"]["entropy_at_matched_grpo"]["mean"] == pytest.approx(1.0 + JITTER.mean(), abs=1e-9)
    assert collapse["analogue"]["entropy_change_grpo"]["mean"] == pytest.approx(0.0, abs=1e-9)
    assert collapse["verdict"] == INCONCLUSIVE


def test_grpo_raises_pass1_reads_grpo_and_the_matched_reading_reads_es_with_greedy_members(monkeypatch):
    """Known truth: GRPO's Pass@1 rises 0.3 -> 0.9 while ES's ends where it began (undecided); along the common Pass@1
    range the long ES run's Pass@32 lies 0.05 above GRPO's and the sampled one's 0.05 below."""
    runs = {
        "grpo": _Trajectory(_rows(0.3, 0.5, 0.7, 0.8, 0.9), _rows(2.0, 1.8, 1.6, 1.4, 1.2)),
        "es": _Trajectory(_rows(0.3, 0.35, 0.4, 0.35, 0.3) + _last(SWING), _rows(*[2.0] * 5)),
        "es long": _long(0.3, 0.95, offset=0.05),
        "es long sampled": _long(0.3, 0.95, offset=-0.05),
    }
    claims = _synthetic(monkeypatch, runs)
    assert claims["grpo_raises_pass1"]["verdict"] == "holds"
    frontier = claims["matched_passk_above_grpo"]
    assert frontier["analogue"]["difference_es_minus_grpo_along_range"]["mean"] == pytest.approx(0.05)
    assert frontier["analogue"]["difference_sampled_es_minus_grpo_along_range"]["mean"] == pytest.approx(-0.05)
    assert frontier["verdict"] == "holds"


@pytest.mark.parametrize(
    "per_shape, verdict",
    [
        ({"a": "holds", "b": "holds"}, "holds"),
        ({"a": "does not hold"}, "does not hold"),
        ({"a": "holds", "b": "does not hold"}, INCONCLUSIVE),  # the shapes disagree: it depends on the shape
        ({"a": "does not hold", "b": "holds", "c": "does not hold"}, INCONCLUSIVE),
        ({"a": "holds", "b": INCONCLUSIVE}, INCONCLUSIVE),
    ],
)
def test_a_claim_over_task_shapes_holds_or_fails_only_when_every_shape_agrees(per_shape, verdict):
    assert passk_vs_base._verdict(per_shape) == verdict
    assert passk_vs_base._depends(per_shape) == ("" if len(set(per_shape.values())) == 1 else "depends on task shape; ")


def test_drift_sparsity_reports_what_its_runs_measured(monkeypatch):
    """D_rel and its ratios, the update-magnitude shares against the null's RMS entry, and the magnitude-thresholded
    policies' Pass@1, each recomputed from the five runs (GRPO, ES, the null, their bf16 twins) and the task."""
    from escov.simulate.experiments import drift_sparsity

    made = []

    def kept(task, phases, *args, **kwargs):
        made.append((task, real(task, phases, *args, **kwargs)))
        return made[-1][1]

    real = drift_sparsity.train
    monkeypatch.setattr(drift_sparsity, "train", kept)
    claims = _by_id(drift_sparsity.run(seeds=SEEDS, scale=SCALE, progress=False))
    task = made[0][0]
    runs = dict(zip(("GRPO", "ES", "ES null", "ES bf16", "ES null bf16"), (run for _, run in made)))
    delta = {k: r.theta - r.theta0 for k, r in runs.items()}
    drift = {k: np.linalg.norm(delta[k], axis=1) / np.linalg.norm(r.theta0, axis=1) for k, r in runs.items()}
    for k, r in runs.items():  # the run's own D_rel: ||theta_T - theta_0|| / ||theta_0||
        assert r.final("drift") == pytest.approx(drift[k], rel=1e-9), k

    ratio_claim = claims["drift_ratio"]
    ratio = drift["ES"] / drift["GRPO"]
    for k in runs:
        assert ratio_claim["analogue"][k]["mean"] == pytest.approx(drift[k].mean()), k
    assert ratio_claim["analogue"]["ratio_es_over_grpo"]["mean"] == pytest.approx(ratio.mean())
    null_ratio = drift["ES null"] / drift["ES"]
    assert ratio_claim["analogue"]["ratio_null_over_es"]["mean"] == pytest.approx(null_ratio.mean())
    verdict, text = decided(BY_ID["drift_ratio"].simulate_test, np.log(ratio))
    assert ratio_claim["verdict"] == verdict and text in ratio_claim["why"]
    for k, r in runs.items():  # each run's Pass@1 gain over its own start
        gain = r.policy["pass@1"][-1] - r.policy["pass@1"][0]
        assert ratio_claim["analogue"]["pass@1_gain"][k]["mean"] == pytest.approx(gain.mean()), k

    unit = np.sqrt(np.mean(delta["ES null"] ** 2))  # the null's RMS update entry
    sparsity = claims["update_sparsity"]
    for k in ("ES", "ES null", "ES bf16", "ES null bf16"):
        entries = np.abs(delta[k][delta[k] != 0])
        for m in drift_sparsity.TAU_MULTIPLES:
            assert sparsity["analogue"][k][f"tau={m:g}xRMS_null"] == pytest.approx(np.mean(entries <= m * unit)), k

    def seed_shares(d):
        return np.array([np.mean(np.abs(row[row != 0]) <= 1.5 * unit) for row in d])

    per_seed = seed_shares(delta["ES"]) - seed_shares(delta["ES null"])
    verdict, text = decided(BY_ID["update_sparsity"].simulate_test, per_seed)
    assert sparsity["verdict"] == verdict and text in sparsity["why"]  # the interval itself, not only its verdict

    def gain_kept(k, keep):
        """Pass@1 over the base of theta_0 + the largest `keep` share of the update entries of each seed."""
        d = delta[k]
        count = int(round(keep * d.shape[1]))
        theta = runs[k].theta0.copy()
        for s in range(d.shape[0]):
            largest = np.argsort(np.abs(d[s]))[::-1][:count]
            theta[s, largest] += d[s, largest]
        return task.success(task.policy(theta)).mean(-1) - task.success(task.policy(runs["ES"].theta0)).mean(-1)

    thresholded = claims["thresholded_pass1"]
    full, top = gain_kept("ES", 1.0), gain_kept("ES", 0.22)
    assert thresholded["analogue"]["pass@1_gain_full"]["mean"] == pytest.approx(full.mean())
    assert thresholded["analogue"]["pass@1_gain_top22"]["mean"] == pytest.approx(top.mean())
    for k in ("ES", "ES null", "GRPO"):
        curve = [gain_kept(k, q).mean() for q in drift_sparsity.KEEP]
        assert thresholded["analogue"]["curves"][k] == pytest.approx(curve), k
    # bf16 updates hold many entries of equal magnitude, so which of them a share keeps is a tie rule: the whole
    # update only
    assert thresholded["analogue"]["curves"]["ES bf16"][0] == pytest.approx(gain_kept("ES bf16", 1.0).mean())
    verdict, text = decided(BY_ID["thresholded_pass1"].simulate_test, top - full)
    assert thresholded["verdict"] == verdict and text in thresholded["why"]
    assert full.mean() != pytest.approx(top.mean())  # keeping a share changes Pass@1: the reading is exercised
