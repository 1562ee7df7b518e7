"""nxpy.extend.lower_stablehlo: the StableHLO of a compiler's graph, for plugins that
compile StableHLO themselves; ``custom_calls=False`` for compilers without XLA's
custom-call targets (portable forms lowered, other custom calls named in an error)."""
import numpy as np
import pytest

import nxpy as nx
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
