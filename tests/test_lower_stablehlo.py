"""nxpy.extend.lower_stablehlo: the StableHLO of a compiler's graph, for plugins that
compile StableHLO themselves; ``custom_calls=False`` for compilers without XLA's
custom-call targets (portable forms lowered, other custom calls named in an error)."""
import re

import numpy as np
import pytest

import nxpy as nx
from nxpy import pjrt
from nxpy.defn import trace
from nxpy.extend import LoweringError, lower_stablehlo
from nxpy.stablehlo import load


def _solve_graph():
    a, b = nx.template((3, 3), "f32"), nx.template((3, 2), "f32")
    return trace(nx.linalg.solve, [a, b], expand=frozenset())  # the solve node kept


def test_portable_form_without_custom_calls():
    g = _solve_graph()
    assert any(e.op == "solve" for e in g.nodes)
    native = lower_stablehlo(g, platform="cpu")
    assert "lapack_sgetrf_ffi" in native  # EXLA's form on CPU: LAPACK custom calls
    text = lower_stablehlo(g, custom_calls=False, compiler="mine")
    assert "custom_call" not in text and "func.func public @main" in text
    a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], np.float32)
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    got = load(text)(nx.tensor(a), nx.tensor(b))  # the module runs (importer, evaluator)
    np.testing.assert_allclose(got.to_numpy(), np.linalg.solve(a, b), rtol=1e-5, atol=1e-6)


def test_other_custom_calls_name_the_op_and_compiler():
    g = trace(lambda x: nx.defn.hook(x * 2, lambda v: None), [nx.template((2,), "f32")])
    assert "custom_call" in lower_stablehlo(g)  # the host callback
    with pytest.raises(LoweringError, match=r"op 'hook' lowers to the custom call '.*', which "
                                            r"compiler 'mine' cannot run"):
        lower_stablehlo(g, custom_calls=False, compiler="mine")
    assert issubclass(LoweringError, NotImplementedError)  # what the kit reports unsupported


def _ties(shape, dtype, seed):
    """Values with many ties, and for floats NaNs, infinities and both zeros."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, shape).astype(dtype)
    if a.dtype.kind == "f":
        flat = a.reshape(-1)
        m = rng.random(flat.size)
        flat[m < 0.1], flat[(m >= 0.1) & (m < 0.2)] = np.nan, -0.0
        flat[(m >= 0.2) & (m < 0.25)] = -np.inf
    return a


_SORTS = {  # name: (function, arguments) — 300 elements an axis: XLA's unstable sort
    # (std::sort) reorders equal elements there
    "permute_by_key": (lambda k, v: nx.permute_by_key(k, v, axis=1),
                       (_ties((3, 300), "int32", 0), _ties((3, 300), "float32", 1))),
    "permute_by_key_desc_f32": (lambda k, v: nx.permute_by_key(k, v, axis=0, direction="desc"),
                                (_ties((300, 2), "float32", 2), _ties((300, 2), "int16", 3))),
    "permute_by_key_same": (lambda k: nx.permute_by_key(k, k, axis=1),
                            (_ties((2, 300), "int32", 4),)),
    "top_k_f32": (lambda x: nx.top_k(x, k=40), (_ties((3, 300), "float32", 5),)),
    "top_k_s32": (lambda x: nx.top_k(x, k=40), (_ties((3, 300), "int32", 6),)),
    "argsort_f64": (lambda x: nx.argsort(x, axis=1, direction="desc"),
                    (_ties((2, 300), "float64", 7),)),
    "sort_f64": (lambda x: nx.sort(x, axis=1), (_ties((2, 300), "float64", 8),)),
}


@pytest.mark.parametrize("name", sorted(_SORTS))
def test_stable_sort_false_orders_as_xla_on_an_unstable_sort(name):
    """``stable_sort=False``: every sort's order is unique (the positions break ties), so
    XLA running the module's sorts unstably (``is_stable = false``) gives EXLA's results
    bit for bit: NaN first in top_k, equal keys in their order."""
    f, args = _SORTS[name]
    g = trace(f, [nx.template(a.shape, str(a.dtype)) for a in args])
    native = lower_stablehlo(g, custom_calls=False)
    text = lower_stablehlo(g, custom_calls=False, stable_sort=False)
    assert "is_stable = true" not in text and "chlo.top_k" not in text
    if name.startswith("top_k"):
        assert "chlo.top_k" in native  # the default keeps XLA's forms
    want = f(*(nx.tensor(a) for a in args))
    want = [t.to_numpy() for t in (want if isinstance(want, tuple) else (want,))]
    exe = pjrt.compile(text, [0])
    outs = [(t.shape, t.type.dtype) for t in g.outputs]
    got = pjrt.executor(exe, outs, 0)([pjrt.to_device(np.asarray(a), 0) for a in args])
    for w, r in zip(want, got):
        r = pjrt.to_host(r)
        assert r.dtype == w.dtype and r.tobytes() == w.tobytes(), (name, r, w)


def test_stable_sort_default_is_xlas_form():
    """The default (EXLA's modules): no extra operand, XLA's stable sort and top_k."""
    k, v = nx.template((3, 5), "s32"), nx.template((3, 5), "f32")
    g = trace(lambda k, v: nx.permute_by_key(k, v, axis=1), [k, v])
    native, unique = lower_stablehlo(g), lower_stablehlo(g, stable_sort=False)
    assert re.search(r'"stablehlo.sort"\(%arg0, %arg1\) <\{dimension = 1 : i64, '
                     r'is_stable = true\}>', native)
    assert "stablehlo.subtract" not in native and "is_stable = false" not in native
    # one more operand: the positions reversed (n - 1 - iota)
    assert re.search(r'"stablehlo.sort"\(%arg0, %arg1, %\d+\) <\{dimension = 1 : i64, '
                     r'is_stable = false\}>', unique)
