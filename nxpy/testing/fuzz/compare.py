"""How results are compared: :data:`TOLERANCES` per type, the tolerance each result of a
program is held to (:func:`tolerances`: its own type's, or that of the least precise
type it is computed from), and the comparison of two arrays (``docs/fuzzing.md``)."""
from __future__ import annotations

import numpy as np

import nxpy as nx
from ... import types as T
from ...defn import tree
from .program import Leaf, Mismatch

#: (rtol, atol) between implementations (NumPy kernels, XLA, JAX): transcendental
#: functions differ in the last bits and sums reassociate; ``atol`` is scaled by the
#: largest finite magnitude of the expected result (cancellation loses digits relative
#: to it, not to the element)
TOLERANCES = {"float16": (1e-2, 1e-2), "bfloat16": (6e-2, 6e-2), "float32": (2e-4, 2e-5),
              "float64": (1e-9, 1e-11), "complex64": (2e-4, 2e-5), "complex128": (1e-9, 1e-11)}


def _loosest(types) -> tuple:
    """The loosest (rtol, atol) of the inexact ones of ``types`` (nxpy type names); (0, 0)
    when there are none (integers and booleans compare exactly)."""
    tols = [TOLERANCES[T.parse(t).dtype.name] for t in types if T.parse(t).is_inexact]
    return max(tols, default=(0.0, 0.0))


def tolerances(prog) -> list:
    """The (rtol, atol) each result of ``prog`` is compared at, in the order of its
    flattened results: the loosest of its own type and of every inexact type of the nodes
    it is computed from (a value computed in bf16 and widened to f32 carries bf16's error;
    an f32 result beside an unrelated bf16 one does not). A grad program's results (one
    gradient per float input) are computed from every node its forward output is: the
    cotangent flows back through them all.

    >>> from nxpy.testing.fuzz import Leaf, Program, Step
    >>> p = Program(0, 0, [Leaf((2,), "f32"), Step("exp", (0,), {}), Leaf((2,), "bf16"),
    ...                    Step("exp", (2,), {})], ["f32", "f32", "bf16", "bf16"], (1, 3))
    >>> tolerances(p) == [TOLERANCES["float32"], TOLERANCES["bfloat16"]]
    True
    """
    if not prog.grad:
        return [_loosest(prog.types[i] for i in prog.sources([k])) for k in prog.outputs]
    forward = {prog.types[i] for i in prog.sources(prog.outputs)}
    leaves = [i for i, n in enumerate(prog.nodes) if isinstance(n, Leaf)]
    return [_loosest(forward | {prog.types[leaves[a]]}) for a in prog.argnums()]


def _values_match(expected: np.ndarray, got: np.ndarray, tol: tuple) -> str | None:
    """None when ``got`` matches ``expected`` (integers and booleans exactly, floats
    within ``tol`` or their own type's tolerance, NaNs in the same places), else what
    differs."""
    if expected.shape != got.shape:
        return f"shape {list(got.shape)}, expected {list(expected.shape)}"
    name = np.dtype(expected.dtype).name
    if name not in TOLERANCES:
        if np.array_equal(expected, got.astype(expected.dtype)):
            return None
        return f"values differ:\n    expected {expected.tolist()}\n    got      {got.tolist()}"
    rtol, atol = max(tol, TOLERANCES[name])
    wide = np.complex128 if expected.dtype.kind == "c" else np.float64
    e, g = expected.astype(wide), got.astype(wide)
    finite = np.abs(e[np.isfinite(e)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    try:
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol * scale, equal_nan=True)
    except AssertionError as err:
        return f"values differ beyond rtol={rtol}, atol={atol}*{scale:g}:{err}"
    return None


def _leaves(r):
    return tree.flatten(r)[0]


def _leaf_tensor(leaf: Leaf, array=None):
    return nx.tensor(leaf.array() if array is None else array, type=leaf.type,
                     names=list(leaf.names) if leaf.names else None)


def _fail(prog, what):
    raise Mismatch(f"{what}\n{prog}\nrepro: {prog.repro()}")
