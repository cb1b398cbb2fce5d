"""Emulation of bfloat16 weights in numpy (the paper's code perturbs bf16 weights in place).

bfloat16 keeps the top 16 bits of a float32 (8 exponent bits, 7 stored mantissa bits), so its
spacing near |w| is 2^(floor(log2 |w|) - 7). Rounding is to nearest, ties to even, as torch does.
"""

from __future__ import annotations

import numpy as np


def round_to_bf16(x) -> np.ndarray:
    """Round values (cast to float32 first) to the nearest bfloat16; returned as float32."""
    a = np.ascontiguousarray(x, dtype=np.float32)
    bits = a.view(np.uint32)
    tie_to_even = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = ((bits + np.uint32(0x7FFF) + tie_to_even) & np.uint32(0xFFFF0000)).view(np.float32)
    return np.where(np.isnan(a), a, rounded)


def perturb_restore_bf16(theta: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Emulate the in-place loop over members on bf16 weights w:  w <- bf16(w + s_i); evaluate; w <- bf16(w - s_i).

    theta: (S, d) weights (bf16 values); steps: (S, N, d) perturbations s_i = sigma eps_i.
    Returns the members' weights (S, N, d) as evaluated and the weights after the last restore,
    which carry the accumulated rounding residue.
    """
    w = round_to_bf16(theta)
    members = np.empty(steps.shape, dtype=np.float32)
    for i in range(steps.shape[1]):
        w = round_to_bf16(w + steps[:, i].astype(np.float32))
        members[:, i] = w
        w = round_to_bf16(w - steps[:, i].astype(np.float32))
    return members, w
