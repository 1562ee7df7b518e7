"""nxpy.random's cases: threefry2x32 keys and samplers are compositions of u32 and float
ops, so a backend or compiler that runs the op set runs them; the integer streams must
match the reference exactly, the float tails (erf_inv, log) to a few ulps."""
from __future__ import annotations

import numpy as np

from .core import Case

__all__ = ["CASES", "OPS"]

OPS = ["random.split", "random.fold_in", "random.bits_split", "random.uniform_split",
       "random.randint_split", "random.normal_split", "random.shuffle"]


def _key(seed):
    return np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32)


CASES = [
    Case("random.split", lambda nx, k: nx.random.split(k, 3), (_key(42),)),
    Case("random.fold_in", lambda nx, k, d: nx.random.fold_in(k, d),
         (_key(7), np.array([0, 1, 99, 2 ** 31], np.uint32))),
    Case("random.bits_split", lambda nx, k: nx.random.bits_split(k, shape=(3, 4), type="u8"),
         (_key(1),)),
    Case("random.uniform_split", lambda nx, k: nx.random.uniform_split(k, shape=(2, 5)),
         (_key(2),)),
    Case("random.uniform_split", lambda nx, k: nx.random.uniform_split(k, shape=(4,), type="f16"),
         (_key(3),), label="f16"),
    Case("random.randint_split",
         lambda nx, k: nx.random.randint_split(k, -5, 300, shape=(6,), type="s16"), (_key(4),)),
    Case("random.normal_split", lambda nx, k: nx.random.normal_split(k, shape=(8,)), (_key(5),),
         tol=1e-5),
    Case("random.shuffle", lambda nx, k: nx.random.shuffle(k, nx.iota((3, 4)), axis=1)[0],
         (_key(6),)),
]
