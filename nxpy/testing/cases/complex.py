"""The complex family's cases: real, imag, conjugate, complex (and phase, built on them),
and the Fourier transforms fft, ifft, fft2, ifft2, rfft, irfft."""
from __future__ import annotations

import numpy as np

from .core import Case, _arr

__all__ = ["CASES", "OPS"]


def _cases():
    C = Case
    z = _arr((2, 3), "complex64")
    z128 = _arr((3, 4), "complex128", seed=1)
    x = _arr((2, 3), "float32", seed=2)
    out = []
    for a in (z, z128, x, _arr((2, 3), "int32", seed=3)):
        out += [C("real", lambda nx, t: nx.real(t), (a,)),
                C("imag", lambda nx, t: nx.imag(t), (a,)),
                C("conjugate", lambda nx, t: nx.conjugate(t), (a,))]
    out += [
        C("real", lambda nx, t: nx.phase(t), (z,), label="phase", tol=1e-6),
        C("complex", lambda nx, a, b: nx.complex(a, b), (x, _arr((3,), "float32", seed=4))),
        C("complex", lambda nx, a, b: nx.complex(a, b),
          (_arr((2,), "int32"), _arr((2,), "float64"))),
        C("complex", lambda nx, a: nx.complex(a, 2.5), (_arr((), "float16"),), label="scalar"),
        C("fft", lambda nx, t: nx.fft(t), (z,), tol=1e-5),
        C("fft", lambda nx, t: nx.fft(t, length=6, axis=0), (x,), label="padded-axis0", tol=1e-5),
        C("fft", lambda nx, t: nx.fft(t, length=3), (z128,), label="truncated", tol=1e-12),
        C("fft", lambda nx, t: nx.fft(t, length="power_of_two"), (_arr((2, 5), "int32"),),
          label="power_of_two", tol=1e-5),
        C("ifft", lambda nx, t: nx.ifft(t), (z,), tol=1e-5),
        C("ifft", lambda nx, t: nx.ifft(t, length=5, axis=-2), (z128,), label="padded", tol=1e-12),
        C("fft2", lambda nx, t: nx.fft2(t), (z128,), tol=1e-12),
        C("fft2", lambda nx, t: nx.fft2(t, lengths=[2, 4], axes=[0, 2]),
          (_arr((3, 2, 3), "float32"),),
          label="axes", tol=1e-5),
        C("ifft2", lambda nx, t: nx.ifft2(t), (z,), tol=1e-5),
        C("ifft2", lambda nx, t: nx.ifft2(t, lengths=[4, 2]), (x,), label="lengths", tol=1e-5),
        C("fft", lambda nx, t: nx.fft(t, length=4), (np.zeros((0, 3), np.float32),), label="empty"),
        C("rfft", lambda nx, t: nx.rfft(t), (x,), tol=1e-5),
        C("rfft", lambda nx, t: nx.rfft(t, length=5, axis=0), (_arr((3, 4), "float64"),),
          label="padded-axis0", tol=1e-12),
        C("rfft", lambda nx, t: nx.rfft(t, length="power_of_two"), (_arr((2, 5), "int32"),),
          label="power_of_two", tol=1e-5),
        C("irfft", lambda nx, t: nx.irfft(t), (z,), tol=1e-5),
        C("irfft", lambda nx, t: nx.irfft(t, length=7, axis=0), (z128,), label="odd-axis0",
          tol=1e-12),
        C("irfft", lambda nx, t: nx.irfft(t, length=2), (x,), label="truncated", tol=1e-5),
    ]
    return out


CASES = _cases()
OPS = ["real", "imag", "conjugate", "complex", "fft", "ifft", "fft2", "ifft2", "rfft", "irfft"]
