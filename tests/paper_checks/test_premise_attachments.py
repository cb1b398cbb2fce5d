"""REPORT.md's lines for the premise's attachments (paper_checks/premise_attachments.py): what they state is what the
attachments hold, written by hand here in the shape reproduce/endpoints.py and base_draws.py give them."""

import pytest

from escov.paper_checks.premise_attachments import FILE, render, render_draws, render_endpoints


def _curve(values: list[float]) -> dict:
    return {str(k): {"mean": v, "lo": v - 0.01, "hi": v + 0.01} for k, v in zip((1, 2, 4), values)}


ENDPOINTS = {
    "samples": 4,
    "temperatures": [0.6],
    "seeds": [0, 1],
    "ks": [1, 2, 4],
    "prompts": 3,
    "base": {"0.6": _curve([0.5, 0.6, 0.75])},
    "grpo_plateau": {"0.6": _curve([0.6, 0.62, 0.64])},
    "es_end": {"0.6": _curve([0.4, 0.55, 0.70])},
    "crossing": {
        "es_over_grpo": {"0.6": {"k_star": 4, "lo": 2, "hi": None}},
        "base_over_grpo": {"0.6": {"k_star": 2, "lo": 2, "hi": 4}},
        "base_over_es": {"0.6": {"k_star": None, "lo": None, "hi": None}},
    },
    "solvability": {
        "grpo_vs_base": {"0.6": {"preserved": 2, "gained": 0, "lost": 1, "neither": 0, "srr": 2 / 3}},
        "es_vs_base": {"0.6": {"preserved": 3, "gained": 0, "lost": 0, "neither": 0, "srr": 1.0}},
        "es_vs_grpo": {"0.6": {"preserved": 2.25, "gained": 0.75, "lost": 0, "neither": 0, "srr": 1.0}},
    },
}


def test_the_endpoint_table_holds_each_models_pass_at_k_and_its_interval_at_the_shown_budgets():
    lines = render_endpoints(ENDPOINTS)
    assert lines[0] == "### Coverage to k = 4 at the endpoints"
    header = lines.index("| model | Pass@1 | Pass@4 |")  # k = 2 is neither a shown budget nor n
    assert lines[header + 2 : header + 5] == [
        "| base | 50.0 [49.0, 51.0] | 75.0 [74.0, 76.0] |",
        "| GRPO at its plateau | 60.0 [59.0, 61.0] | 64.0 [63.0, 65.0] |",
        "| ES at its end | 40.0 [39.0, 41.0] | 70.0 [69.0, 71.0] |",
    ]
    text = "\n".join(lines)
    assert "ES first leads GRPO: k* = 4 [2, beyond n]" in text  # an upper end past n in the bootstrap
    assert "the base first leads GRPO: k* = 2 [2, 4]" in text
    assert "the base first leads ES: not up to k = 4" in text
    assert "GRPO against the base: kept 2, gained 0, lost 1 (retention 66.7%)" in text
    assert "ES against GRPO: kept 2.2, gained 0.8, lost 0 (retention 100.0%)" in text  # averaged over seed pairs
    assert "3 test prompts (2 seeds for GRPO and ES" in text


def test_the_draws_table_counts_the_narrowed_and_marks_the_answers_base():
    entry = {
        "base": {"seed": 0},
        "grpo": {"learning_rate": 1e-4, "num_generations": 8},
        "seeds": [300, 301, 302],
        "steps": 300,
        "prompts": 128,
        "samples": 128,
        "verdict": "narrowed",
        "pass32_plateau_minus_base": {"mean": -0.0807, "lo": -0.1181, "hi": -0.0432},
    }
    draws = {
        "draws": [
            entry | {"draw": "seed 0", "answer_base": True},
            entry | {"draw": "seed 1", "verdict": "no_change_detected"},
            entry | {"draw": "lr 3e-05", "grpo": {"learning_rate": 3e-5, "num_generations": 8}},
        ],
        "narrowed": 2,
        "of": 3,
    }
    lines = render_draws(draws)
    assert lines[:2] == ["### The premise across pretraining draws", ""] and lines[-1] == "" and lines[3] == ""
    assert lines[4:6] == [
        "| draw | GRPO | design | Pass@32 plateau - base | verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    assert "**narrowed on 2 of 3**" in lines[2]
    rows = [line for line in lines if line.startswith("| seed") or line.startswith("| lr")]
    assert rows[0].startswith("| seed 0 (the answer's base) | lr 0.0001, G 8 | 3 seeds x 128 prompts x 128 samples")
    assert rows[0].endswith("| -8.07 pts [-11.81, -4.32] | narrowed |")
    assert rows[1].endswith("| no_change_detected |") and rows[2].startswith("| lr 3e-05 | lr 3e-05, G 8 |")
    # a draw whose record lacks its GRPO settings or its interval: written as unknown, not a crash
    bare = entry | {"draw": "seed 2", "grpo": {}, "pass32_plateau_minus_base": {"reason": "1 seed"}}
    row = render_draws({"draws": [bare], "narrowed": 0, "of": 1})[6]
    assert row == "| seed 2 | lr ?, G ? | 3 seeds x 128 prompts x 128 samples, 300 steps | - | narrowed |"
    # a step size of more than 6 significant digits is written with 6 ('g')
    odd = entry | {"draw": "lr", "grpo": {"learning_rate": 1e-4 / 3, "num_generations": 8}}
    assert render_draws({"draws": [odd], "narrowed": 1, "of": 1})[6].startswith("| lr | lr 3.33333e-05, G 8 |")


@pytest.mark.parametrize(
    "n, ks, header",
    [
        (16, [1, 2, 16], "| model | Pass@1 | Pass@16 |"),  # 8 is a shown budget below n, but not measured
        (32, [1, 8, 32], "| model | Pass@1 | Pass@8 | Pass@32 |"),  # n a shown budget itself: one column
    ],
)
def test_the_columns_are_the_shown_budgets_measured_below_n_then_n(n, ks, header):
    assert render_endpoints(ENDPOINTS | {"samples": n, "ks": ks})[6] == header


def test_the_plots_k_axis_is_ticked_at_the_shown_budgets_measured_and_the_last(tmp_path, figures):
    from escov.paper_checks.premise_attachments import MODELS, plot_endpoints

    ks = [1, 2, 4, 8, 16, 64, 256, 1024, 2048]
    curve = {str(k): {"mean": 0.5, "lo": 0.4, "hi": 0.6} for k in ks}
    att = ENDPOINTS | {"ks": ks} | {name: {"0.6": curve} for name in MODELS}
    plot_endpoints(att, tmp_path / "p.png")
    (fig,) = figures
    (ax,) = [ax for ax in fig.axes if ax.get_lines()]
    assert list(ax.get_xticks()) == [1, 4, 16, 64, 256, 1024, 2048]


def test_render_draws_the_plot_only_where_a_report_folder_is_given(tmp_path):
    assert render({}) == []  # a record without attachments
    lines = render({"pass_at_k_endpoints": ENDPOINTS}, tmp_path)
    assert (tmp_path / FILE).stat().st_size > 0 and f"]({FILE})" in "\n".join(lines)
    assert render({"pass_at_k_endpoints": ENDPOINTS}) == lines  # the same lines without drawing


@pytest.mark.parametrize("missing", ["base", "es_end"])
def test_a_model_missing_at_a_budget_is_a_dash(missing):
    att = ENDPOINTS | {missing: {"0.6": {}}}
    assert "| - | - |" in "\n".join(render_endpoints(att))


def test_the_endpoint_section_line_by_line_with_missing_ends_written_as_dashes():
    """Every line of one temperature's section, written out here; a crossing without a lower end, a set without a
    retention and a model without a budget are dashes; k = 8 is shown when measured and below n."""
    att = ENDPOINTS | {
        "samples": 16,
        "ks": [1, 2, 8, 16],
        "base": {"0.6": {"1": {"mean": 0.5, "lo": 0.49, "hi": 0.51}, "8": {"mean": 0.7, "lo": 0.69, "hi": 0.71}}},
        "grpo_plateau": {"0.6": {"1": {"mean": 0.6, "lo": 0.59, "hi": 0.61}}},
        "es_end": {},
        "crossing": {
            "es_over_grpo": {"0.6": {"k_star": 8, "lo": None, "hi": 16}},
            "base_over_grpo": {},
            "base_over_es": {"0.6": {"k_star": None}},
        },
        "solvability": {
            key: {"0.6": {"preserved": 1, "gained": 2, "lost": 0.5, "neither": 0, "srr": None}}
            for key in ("grpo_vs_base", "es_vs_base", "es_vs_grpo")
        },
    }
    sets = "kept 1, gained 2, lost 0.5 (retention -)"
    assert render_endpoints(att)[:4] == [
        "### Coverage to k = 16 at the endpoints",
        "",
        "The base, GRPO's last checkpoint and ES's last checkpoint, 16 samples on each of the 3 test prompts (2 seeds "
        "for GRPO and ES, averaged within a prompt), Pass@k in points with 95% problem-bootstrap intervals, each "
        "model's own (a difference between two models is paired by prompt and tighter). Exploratory (registered as "
        f"such). ![Pass@k to 16]({FILE})",
        "",
    ]
    assert render_endpoints(att)[4:] == [
        "T = 0.6:",
        "",
        "| model | Pass@1 | Pass@8 | Pass@16 |",
        "| --- | --- | --- | --- |",
        "| base | 50.0 [49.0, 51.0] | 70.0 [69.0, 71.0] | - |",
        "| GRPO at its plateau | 60.0 [59.0, 61.0] | - | - |",
        "| ES at its end | - | - | - |",
        "",
        "- Crossing budgets: ES first leads GRPO: k* = 8 [-, 16]; the base first leads GRPO: not up to k = 16; "
        "the base first leads ES: not up to k = 16.",
        f"- Prompts solved at k = 16 (solvability sets): GRPO against the base: {sets}; ES against the base: {sets}; "
        f"ES against GRPO: {sets}.",
        "",
    ]


def test_the_plot_draws_each_endpoints_curve_and_band_in_points_on_a_log_k_axis_per_temperature(tmp_path, figures):
    """plot_endpoints on two temperatures: a panel each, titled with T and the prompt count; per endpoint a line at
    100 x the mean Pass@k over k (log base 2) and a band from 100 x lo to 100 x hi, in that endpoint's colour and
    label; the file is written."""
    from matplotlib.colors import to_rgba

    from escov.paper_checks.premise_attachments import COLOURS, MODELS, plot_endpoints

    att = ENDPOINTS | {"temperatures": [0.6, 1.0]}
    for name in MODELS:
        att[name] = ENDPOINTS[name] | {"1": _curve([v + 0.1 for v in (0.2, 0.3, 0.4)])}
    path = plot_endpoints(att, tmp_path / "p.png")
    assert path == tmp_path / "p.png" and path.stat().st_size > 0
    (fig,) = figures
    axes = [ax for ax in fig.axes if ax.get_lines()]
    assert len(fig.axes) == 2  # one row: a panel per temperature, no empty one
    assert [ax.get_title() for ax in axes] == ["T = 0.6, 3 test prompts", "T = 1, 3 test prompts"]
    for ax, t in zip(axes, ("0.6", "1")):
        assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("k (samples)", "Pass@k (points)")
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert set(lines) == set(MODELS.values())
        bands = ax.collections
        assert len(bands) == len(MODELS)
        for (name, label), band in zip(MODELS.items(), bands):
            rows = [att[name][t][str(k)] for k in (1, 2, 4)]
            line = lines[label]
            assert list(line.get_xdata()) == [1, 2, 4]
            assert list(line.get_ydata()) == pytest.approx([100 * r["mean"] for r in rows])
            assert to_rgba(line.get_color()) == to_rgba(COLOURS[name])
            ys = band.get_paths()[0].vertices[:, 1]
            assert min(ys) == pytest.approx(100 * min(r["lo"] for r in rows))
            assert max(ys) == pytest.approx(100 * max(r["hi"] for r in rows))
            assert to_rgba(band.get_facecolor()[0])[:3] == to_rgba(COLOURS[name])[:3]


def test_the_section_holds_the_draws_table_after_the_endpoints():
    draws = {"draws": [], "narrowed": 0, "of": 0}
    lines = render({"pass_at_k_endpoints": ENDPOINTS, "base_draws": draws})
    assert lines == render_endpoints(ENDPOINTS) + render_draws(draws)
    assert render({"base_draws": draws}) == render_draws(draws)
