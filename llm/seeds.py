"""The one rule that turns labels into a random seed (imports no torch, so settings, the report's trust screen and
the run directory's readers can recompute a run's seeds without loading a model).

derive_seed(*parts) = the first 8 bytes of BLAKE2b("/".join(str(p) for p in parts)), little-endian, masked to 63 bits:
stable across runs, machines and Python's hash randomisation.
"""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any tuple of labels (e.g. run seed, step, purpose), stable across runs and machines."""
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)
