"""llm/seeds.py: derive_seed is the documented rule, byte for byte (a run's seeds are recomputed from it by the
report's trust screen and the run directory's readers, so the rule itself is part of every published run)."""

import hashlib

from escov.llm.seeds import derive_seed


def _by_hand(*parts) -> int:
    text = "/".join(str(p) for p in parts)
    first8 = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return sum(byte << (8 * i) for i, byte in enumerate(first8)) % 2**63  # little-endian, 63 bits


def test_the_seed_is_blake2b_of_the_labels_joined_by_slashes_little_endian_in_63_bits():
    labels = [(7,), (0, 3, "es-null"), (12, 4, "member", 31), ("countdown", "test", 0), (2**40, -1, "x/y")]
    assert [derive_seed(*p) for p in labels] == [_by_hand(*p) for p in labels]
    seeds = [derive_seed(0, step, "draw") for step in range(64)]
    assert all(0 <= s < 2**63 for s in seeds) and max(seeds) >= 2**62  # the top kept bit is used
    assert derive_seed(1, 23) != derive_seed(12, 3)  # the separator keeps labels apart
