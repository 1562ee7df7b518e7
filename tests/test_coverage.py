"""Every primitive × every consumer of ops (nxpy/testing/coverage.py): covered, or a gap
declared with its reason; no declaration outlives its gap; no consumer handles a name no
primitive(...) declares; docs/ops.md is the matrix."""
from pathlib import Path

import numpy as np

import nxpy as nx

import pytest

from nxpy.backends.numpy import NumpyBackend
from nxpy.defn import shard_map
from nxpy.defn.core import trace
from nxpy.ops import core
from nxpy.ops.core import PRIMITIVES, dispatch, primitive
from nxpy.testing import coverage
from nxpy.testing.cases import Case
from nxpy.testing.fuzz.sharded import COLLECTIVE_PRIMITIVES, _nx_collective

DOC = Path(__file__).resolve().parents[1] / "docs" / "ops.md"

#: where an op gets each column (docs/adding_an_op.md walks through them)
WHERE = {
    "kernel": "a method of nxpy/backends/numpy/ (or nxpy.extend.register_portable)",
    "lowering": "a rule in nxpy/compilers/exla/lower_*.py (register_lowering)",
    "grad": "a rule in nxpy/defn/transforms/grad_rules.py or the family's module "
            "(register_grad_rule), or non_differentiable(...)",
    "jvp": "a rule in nxpy/defn/transforms/jvp_rules.py (register_jvp_rule), "
           "or non_differentiable(...)",
    "batch": "a property in primitive(..., props=...) "
             "or a rule in nxpy/defn/transforms/batch_rules.py",
    "sharding": "a property in primitive(..., props=...) or a rule in nxpy/defn/sharding/specs.py",
    "importer": "a rule in nxpy/stablehlo/rules*.py for the StableHLO its lowering emits",
    "conformance": "a case in nxpy/testing/cases/",
    "fuzz": "a twin in nxpy/testing/fuzz/twins.py",
}


def _gaps_report(missing) -> str:
    lines = []
    for op, c in missing:
        note = coverage.gap_note(op, c)
        lines.append(f"  {op}: no {c} ({coverage.CONSUMERS[c]}); add {WHERE[c]}, or declare "
                     f"why not" + (f" [{note}]" if note else ""))
    return ("ops a consumer does not cover, with no reason declared in "
            "nxpy/testing/coverage.py's GAPS:\n" + "\n".join(lines))


def test_every_gap_is_declared():
    missing = coverage.undeclared()
    assert not missing, _gaps_report(missing)


def test_no_declared_gap_is_closed():
    closed = coverage.stale()
    assert not closed, "declared gaps that are covered now (or ops that are gone); " \
        "remove them from GAPS:\n" + "\n".join(f"  {op} / {c}: {r}" for op, c, r in closed)


def test_where_names_every_consumer():
    assert set(WHERE) == set(coverage.CONSUMERS)


def test_docs_ops_md_is_current():
    text = DOC.read_text()
    assert text == coverage.with_matrix(text), \
        "docs/ops.md's matrix is stale: run python -m nxpy.testing.coverage"


def test_an_op_added_to_one_consumer_only_is_reported(monkeypatch):
    monkeypatch.setitem(PRIMITIVES, "half_added", "test")
    monkeypatch.setitem(core.GRAD_RULES, "half_added", lambda *a: None)
    missing = {c for op, c in coverage.undeclared() if op == "half_added"}
    assert missing == set(coverage.CONSUMERS) - {"grad"}


def test_a_property_brings_its_rules(monkeypatch):
    """Declared elementwise, an op gets the batching and sharding rules with nothing else."""
    monkeypatch.setitem(PRIMITIVES, "half_added", "test")
    monkeypatch.setattr(core, "OP_PROPERTIES", dict(core.OP_PROPERTIES))
    for table in (core.BATCH_RULES, coverage.SHARDING_RULES):
        monkeypatch.setitem(table, "half_added", None)
        del table["half_added"]
    primitive("test", "half_added", props=("elementwise",))
    row = coverage.matrix()["half_added"]
    assert row["batch"] is True and row["sharding"] is True
    assert core.BATCH_RULES["half_added"] is core.BATCH_RULES["add"]


def test_unknown_property_is_refused():
    with pytest.raises(ValueError, match="unknown properties \\['elementwize'\\]"):
        primitive("test", "nothing", props=("elementwize",))


def _stray_report(stray) -> str:
    return ("names that no primitive(...) declares (an op added without its row in the "
            "table: declare it with primitive(family, name) in its nxpy/ops/ module, or fix "
            "the name):\n" + "\n".join(f"  {where}: {', '.join(names)}"
                                        for where, names in stray.items()))


def test_every_rule_kernel_and_node_is_for_a_declared_op():
    """A rule registered for a name that is neither a primitive nor a registered op (a typo,
    or an op whose primitive(...) declaration was forgotten), a NumPy backend op method of
    such a name, or such a node in a traced conformance case is an error."""
    stray = coverage.stray()
    assert not stray, _stray_report(stray)


def _bare_case(op):
    """A conformance case of an op ``op`` whose front end is a bare dispatch."""
    def fn(nx, x):
        return dispatch(op, nx.template(x.shape, x.type), x)
    return Case(op, fn, (np.array([2.0, 3.0], np.float32),))


class _HalvingBackend(NumpyBackend):
    def half_kernel(self, out, x):   # a kernel whose op no primitive(...) declares
        return self._wrap(out, x.data / 2)


def test_stray_names_a_numpy_kernel_of_an_undeclared_op():
    stray = coverage.stray(tables={}, backend=_HalvingBackend, cases=[])
    assert stray == {"NumPy backend": ["half_kernel"]}
    assert "NumPy backend: half_kernel" in _stray_report(stray)
    assert coverage.stray(tables={}, backend=NumpyBackend, cases=[]) == {}


def test_stray_names_an_undeclared_op_the_expr_backend_records():
    stray = coverage.stray(tables={}, cases=[_bare_case("half_traced"), _bare_case("negate")])
    assert stray == {"Expr nodes of the conformance cases": ["half_traced"]}
    assert "half_traced" in coverage.recorded_ops([_bare_case("half_traced")])


def test_stray_names_a_rule_of_an_undeclared_op():
    stray = coverage.stray(tables={"LOWERINGS": {"half_lowered": None, "add": None}},
                           cases=[])
    assert stray == {"LOWERINGS": ["half_lowered"]}


def test_import_failure_reports_rather_than_raises():
    why = coverage.import_failure(_bare_case("half_row"))
    assert why.startswith("LoweringError: ") and "'half_row'" in why, why
    assert coverage.import_failure(_bare_case("negate")) is None


def test_a_row_with_no_kernel_lowering_or_grad_names_its_gaps(monkeypatch):
    """A primitive(...) row with a conformance case and nothing else: every gap named (the
    importer's with the lowering error), none raised."""
    monkeypatch.setitem(PRIMITIVES, "half_row", "test")
    cases = {**coverage._first_cases(), "half_row": _bare_case("half_row")}
    monkeypatch.setattr(coverage, "_first_cases", lambda: cases)
    try:
        missing = [(op, c) for op, c in coverage.undeclared() if op == "half_row"]
        report = _gaps_report(missing)
    finally:
        coverage._imports.cache_clear()
    assert {c for _, c in missing} == set(coverage.CONSUMERS) - {"conformance"}
    assert "half_row: no kernel" in report and "half_row: no lowering" in report
    assert "half_row: no grad" in report
    assert "half_row: no importer" in report and "[LoweringError: " in report


@pytest.mark.parametrize("name", sorted(COLLECTIVE_PRIMITIVES))
def test_sharded_fuzz_collectives_trace_to_their_primitive(name):
    mesh = nx.Mesh("cov", (2,), axis_names=("x",))
    kw = {"dim": 0, "tiled": True, "split": 0, "concat": 0, "perm": [(0, 1), (1, 0)]}
    body = _nx_collective(name, "x", kw)
    f = shard_map(body, mesh=mesh, in_specs=nx.P("x"), out_specs=nx.P("x"))
    ops = coverage.ops_in(trace(f, (nx.template((4, 2), "f32"),), {}))
    assert COLLECTIVE_PRIMITIVES[name] in ops, (name, sorted(ops))
