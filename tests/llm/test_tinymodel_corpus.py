"""The tiny base model's pretraining corpus and presets (llm/tinymodel.py): the mixture gives each part
its stated share, the rare family is thinned by exactly rare_keep, and every preset is a valid shape."""

import random
from dataclasses import replace

import pytest

from escov.llm.tasks import arithmetic, countdown
from escov.llm.tinymodel import PRESETS, in_rare_family, parse_overrides, preset_with, sample_example

DRAWS = 6000


def draw(preset, n=DRAWS, seed="corpus-test"):
    rng = random.Random(seed)
    cd = countdown.Countdown(min_numbers=preset.min_numbers, max_numbers=preset.max_numbers)
    return [sample_example(rng, preset, cd, arithmetic.Arithmetic()) for _ in range(n)]


def parse_countdown(prompt):
    """(numbers, target) of a plain Countdown prompt "3,7,25->46:"; None for an arithmetic prompt."""
    if "->" not in prompt:
        return None
    numbers, target = prompt[:-1].split("->")
    return [int(x) for x in numbers.split(",")], int(target)


def within(share, expected, n):
    """share is within 4.5 binomial standard errors of expected (a false alarm about once in 150,000)."""
    return abs(share - expected) <= 4.5 * (expected * (1 - expected) / n) ** 0.5 + 1e-9


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_is_a_valid_shape(name):
    p = PRESETS[name]
    assert p.hidden_size % p.num_heads == 0 and p.hidden_size // p.num_heads in (32, 64, 80, 96, 112, 128)
    assert 0 < p.warmup_steps < p.steps and p.batch_size > 0 and p.lr > 0
    assert 0 <= p.off_target_frac < 1 and 0 <= p.arithmetic_frac < 1 and 0 <= p.rare_keep <= 1
    assert 2 <= p.min_numbers <= p.max_numbers <= 5
    countdown.Countdown(min_numbers=p.min_numbers, max_numbers=p.max_numbers)  # raises on an invalid range


def test_the_mixture_gives_each_part_its_share():
    preset = replace(PRESETS["test"], arithmetic_frac=0.3, off_target_frac=0.2)
    examples = draw(preset)
    cd = [(parse_countdown(p), c) for p, c in examples if parse_countdown(p) is not None]
    assert within(1 - len(cd) / len(examples), 0.3, len(examples))
    misses = sum(countdown.score(c, numbers, target) == 0 for (numbers, target), c in cd)
    # an off-target draw keeps the true target when 50 tries find no other one (rare): 0.2 or a little less
    se = (0.2 * 0.8 / len(cd)) ** 0.5
    assert 0.2 - 0.01 - 4.5 * se <= misses / len(cd) <= 0.2 + 4.5 * se
    assert {len(numbers) for (numbers, _), _ in cd} == {3, 4}


def test_three_number_corpus_has_only_three_numbers():
    examples = draw(replace(PRESETS["test"], min_numbers=3, max_numbers=3), n=1000)
    assert {len(parse_countdown(p)[0]) for p, _ in examples if parse_countdown(p)} == {3}


def solved_share_above(preset, threshold):
    """Share of worked (correct) Countdown solutions whose target is above threshold."""
    solved = [
        (numbers, target)
        for (numbers, target), c in ((parse_countdown(p), c) for p, c in draw(preset) if parse_countdown(p))
        if countdown.score(c, numbers, target) == 1
    ]
    return sum(t > threshold for _, t in solved) / len(solved), len(solved)


@pytest.mark.parametrize("keep", [0.0, 0.1, 0.5])
def test_the_rare_family_is_thinned_by_rare_keep(keep):
    # without a family, q = share of drawn instances with target above 40 (read from the sampler itself);
    # kept with probability keep and redrawn otherwise, the family's share becomes keep q / (keep q + 1 - q)
    base = replace(PRESETS["test"], arithmetic_frac=0.0, off_target_frac=0.0, min_numbers=3, max_numbers=3)
    rng, cd = random.Random("q"), countdown.Countdown(min_numbers=3, max_numbers=3)
    q = sum(cd.sample_expression(rng, "train")[2] > 40 for _ in range(DRAWS)) / DRAWS
    assert 0.1 < q < 0.6  # the family is a real part of the corpus
    share, n = solved_share_above(replace(base, rare_above=40, rare_keep=keep), 40)
    expected = keep * q / (keep * q + 1 - q)
    assert within(share, expected, n), (share, expected)
    if keep == 0:
        assert share == 0


def test_the_earlier_presets_keep_their_corpus():
    # test, small, narrow and default predate the corpus fields: 3 or 4 numbers, no rare family
    for name in ("test", "small", "narrow", "default"):
        p = PRESETS[name]
        assert (p.min_numbers, p.max_numbers, p.rare_above, p.rare_keep) == (3, 4, 0, 1.0)
    assert not in_rare_family(100, "50*2", PRESETS["default"])
    assert in_rare_family(51, "50+1", replace(PRESETS["default"], rare_above=50)) and not in_rare_family(
        50, "49+1", replace(PRESETS["default"], rare_above=50)
    )
    divides = replace(PRESETS["default"], rare_ops="/")
    assert in_rare_family(5, "10/2", divides) and not in_rare_family(5, "3+2", divides)
    assert in_rare_family(5, "10/2", replace(divides, rare_above=50)) and in_rare_family(
        51, "50+1", replace(divides, rare_above=50)
    )


@pytest.mark.parametrize("keep", [0.0, 0.5])
def test_an_operator_family_is_thinned_by_rare_keep(keep):
    """Worked solutions using "/" are kept with probability keep: none at 0; at 0.5 the share of division
    solutions is keep q / (keep q + 1 - q), q the share among drawn solutions (read from the sampler)."""
    base = replace(PRESETS["test"], arithmetic_frac=0.0, off_target_frac=0.0, min_numbers=3, max_numbers=3)
    rng, cd = random.Random("q/"), countdown.Countdown(min_numbers=3, max_numbers=3)
    q = sum("/" in cd.sample_expression(rng, "train")[1] for _ in range(DRAWS)) / DRAWS
    assert 0.1 < q < 0.6
    solutions = [c for p, c in draw(replace(base, rare_ops="/", rare_keep=keep)) if parse_countdown(p)]
    share = sum("/" in c for c in solutions) / len(solutions)
    expected = keep * q / (keep * q + 1 - q)
    assert within(share, expected, len(solutions)), (share, expected)
    with pytest.raises(ValueError, match="rare_ops must be operators among"):
        replace(base, rare_ops="^")


def test_overrides_replace_fields_with_their_types():
    p = preset_with("default", parse_overrides(["steps=3200", "rare_keep=0.25", " max_numbers = 3"]))
    assert (p.steps, p.rare_keep, p.max_numbers) == (3200, 0.25, 3) and isinstance(p.steps, int)
    assert p.hidden_size == PRESETS["default"].hidden_size
    with pytest.raises(ValueError, match="--set stepz: no such preset field"):
        preset_with("default", {"stepz": "1"})
    with pytest.raises(ValueError, match="--set steps=1.5: expected int"):
        preset_with("default", {"steps": "1.5"})
    with pytest.raises(ValueError, match="rare_keep must be in"):
        preset_with("default", {"rare_keep": "1.5"})
    with pytest.raises(ValueError, match="--set takes FIELD=VALUE"):
        parse_overrides(["steps"])
    with pytest.raises(ValueError, match="preset must be one of"):
        preset_with("nope")


def texts_by_instance(preset, n=3000):
    """{(sorted numbers, target): set of worked texts} over n draws from numbers 1..6, where instances repeat."""
    rng = random.Random("forms")
    cd = countdown.Countdown(min_numbers=3, max_numbers=3, max_number=6)
    out: dict = {}
    for _ in range(n):
        prompt, text = sample_example(rng, preset, cd, arithmetic.Arithmetic())
        numbers, target = parse_countdown(prompt)
        assert countdown.score(text, numbers, target) == 1.0, (prompt, text)
        out.setdefault((tuple(sorted(numbers)), target), set()).add(text)
    return out


def test_a_canonical_corpus_answers_each_instance_with_one_text_outside_the_rare_family():
    base = replace(PRESETS["test"], arithmetic_frac=0.0, off_target_frac=0.0, min_numbers=3, max_numbers=3)
    drawn = texts_by_instance(base)
    assert max(len(texts) for texts in drawn.values()) >= 4  # as drawn: orders and trees vary
    canonical = texts_by_instance(replace(base, solution_form="canonical"))
    assert len(canonical) > 50 and all(len(texts) == 1 for texts in canonical.values())
    no_division = texts_by_instance(replace(base, solution_form="canonical", rare_ops="/", rare_keep=0.0))
    assert all("/" not in text for texts in no_division.values() for text in texts)
    # an instance with a solution that divides and one that does not is answered by the other one
    assert any(any("/" in t for t in canonical[key]) for key in no_division if key in canonical)
    with pytest.raises(ValueError, match="solution_form must be one of random, canonical"):
        preset_with("default", {"solution_form": "sorted"})
