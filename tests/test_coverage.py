"""Every primitive × every consumer of ops (nxpy/testing/coverage.py): covered, or a gap
declared with its reason; no declaration outlives its gap; docs/ops.md is the matrix."""
from pathlib import Path

import nxpy as nx

import pytest

from nxpy.compilers.evaluator import EVAL_RULES
from nxpy.compilers.exla.lowering import LOWERINGS
from nxpy.compilers.spmd import SPMD_RULES
from nxpy.defn.jvp_rules import JVP_RULES
from nxpy.defn import shard_map
from nxpy.defn.core import trace
from nxpy.ops import core
from nxpy.ops.core import PRIMITIVES, primitive
from nxpy.testing import coverage
from nxpy.testing.fuzz.sharded import COLLECTIVE_PRIMITIVES, _nx_collective

DOC = Path(__file__).resolve().parents[1] / "docs" / "ops.md"

#: where an op gets each column (docs/adding_an_op.md walks through them)
WHERE = {
    "kernel": "a method of nxpy/backends/numpy/ (or nxpy.extend.register_portable)",
    "lowering": "a rule in nxpy/compilers/exla/lower_*.py (register_lowering)",
    "grad": "a rule in nxpy/defn/grad_rules.py or the family's module (register_grad_rule), "
            "or non_differentiable(...)",
    "jvp": "a rule in nxpy/defn/jvp_rules.py (register_jvp_rule), or non_differentiable(...)",
    "batch": "a property in primitive(..., props=...) or a rule in nxpy/defn/batch_rules.py",
    "sharding": "a property in primitive(..., props=...) or a rule in nxpy/defn/sharding.py",
    "importer": "a rule in nxpy/stablehlo/rules*.py for the StableHLO its lowering emits",
    "conformance": "a case in nxpy/testing/cases/",
    "fuzz": "a twin in nxpy/testing/fuzz/twins.py",
}


def test_every_gap_is_declared():
    missing = coverage.undeclared()
    assert not missing, "ops a consumer does not cover, with no reason declared in " \
        "nxpy/testing/coverage.py's GAPS:\n" + "\n".join(
            f"  {op}: no {c} ({coverage.CONSUMERS[c]}); add {WHERE[c]}, or declare why not"
            for op, c in missing)


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


def test_every_rule_is_for_a_declared_op():
    """A rule registered for a name that is neither a primitive nor a registered op (a typo,
    or an op whose primitive(...) declaration was forgotten) is an error."""
    tables = {"LOWERINGS": LOWERINGS, "GRAD_RULES": core.GRAD_RULES, "JVP_RULES": JVP_RULES,
              "BATCH_RULES": core.BATCH_RULES, "SHARDING_RULES": coverage.SHARDING_RULES,
              "EVAL_RULES": EVAL_RULES, "SPMD_RULES": SPMD_RULES, "PORTABLE": core.PORTABLE,
              "NON_DIFFERENTIABLE": core.NON_DIFFERENTIABLE}
    stray = {name: sorted(set(t) - set(PRIMITIVES) - set(core.OPS)) for name, t in tables.items()}
    stray = {k: v for k, v in stray.items() if v}
    assert not stray, f"rules for names no primitive(...) declares: {stray}"


def _ops_in(fn) -> set:
    ops = set()
    for n in fn.nodes:
        ops.add(n.op)
        for sub in n.fns or ():
            ops |= _ops_in(sub)
    return ops


@pytest.mark.parametrize("name", sorted(COLLECTIVE_PRIMITIVES))
def test_sharded_fuzz_collectives_trace_to_their_primitive(name):
    mesh = nx.Mesh("cov", (2,), axis_names=("x",))
    kw = {"dim": 0, "tiled": True, "split": 0, "concat": 0, "perm": [(0, 1), (1, 0)]}
    body = _nx_collective(name, "x", kw)
    f = shard_map(body, mesh=mesh, in_specs=nx.P("x"), out_specs=nx.P("x"))
    ops = _ops_in(trace(f, (nx.template((4, 2), "f32"),), {}))
    assert COLLECTIVE_PRIMITIVES[name] in ops, (name, sorted(ops))
