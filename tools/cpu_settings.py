"""Runs a command as an older x86-64 CPU would compute it, on this machine.

    python tools/cpu_settings.py noavx512 CMD...  # as a CPU with AVX2 and FMA, no AVX-512
    python tools/cpu_settings.py noavx2 CMD...    # as a CPU with AVX only (no AVX2, no FMA)
    python tools/cpu_settings.py baseline CMD...  # NumPy's baseline kernels; XLA at AVX
    python tools/cpu_settings.py noavx2           # prints the variables it would set

Three libraries pick their kernels by the CPU at run time, and each has a switch to pick
as a lesser CPU would: NumPy's SIMD dispatch (``NPY_DISABLE_CPU_FEATURES``, the names of
the installed NumPy's dispatch targets), XLA:CPU's code generation
(``--xla_cpu_max_isa``; jaxlib needs AVX, so AVX is the floor) and OpenBLAS's kernels
(``OPENBLAS_CORETYPE``). ``make cpu CPU=...`` runs the suite under them, so that a test
needing one CPU's floating-point bits fails here and in CI, not on a user's machine
(docs/guarantees.md, "Results on every CPU"). A user's ``XLA_FLAGS`` are kept.

Standard library and NumPy only (no nxpy, no jax).
"""
import os
import sys

#: setting → (NumPy dispatch targets to disable, XLA's ISA cap, OpenBLAS core type)
SETTINGS = {
    "noavx512": (lambda t: "AVX512" in t or t == "X86_V4", "AVX2", "Haswell"),
    "noavx2": (lambda t: any(s in t for s in ("AVX", "FMA", "F16C", "X86_V3", "X86_V4")),
               "AVX", "Sandybridge"),
    "baseline": (lambda t: True, "AVX", "Nehalem"),
}


def dispatch_targets():
    """The SIMD targets the installed NumPy dispatches to at run time (above its baseline)."""
    try:
        from numpy._core import _multiarray_umath as m
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as m
    return list(m.__cpu_dispatch__)


def environment(setting: str) -> dict:
    """The variables of ``setting`` (one of :data:`SETTINGS`)."""
    if setting not in SETTINGS:
        raise SystemExit(f"cpu_settings.py: setting must be one of {', '.join(SETTINGS)}; "
                         f"got {setting!r}")
    off, isa, core = SETTINGS[setting]
    flags = " ".join(f for f in [os.environ.get("XLA_FLAGS", ""), f"--xla_cpu_max_isa={isa}"]
                     if f)
    disabled = [t for t in dispatch_targets() if off(t)]
    return {"NPY_DISABLE_CPU_FEATURES": ",".join(disabled), "XLA_FLAGS": flags,
            "OPENBLAS_CORETYPE": core}


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    env = environment(sys.argv[1])
    if len(sys.argv) == 2:
        print("\n".join(f"{k}={v}" for k, v in env.items()))
    else:
        print(f"cpu_settings.py {sys.argv[1]}: " + "; ".join(f"{k}={v}" for k, v in env.items()),
              flush=True)
        os.execvpe(sys.argv[2], sys.argv[2:], {**os.environ, **env})
