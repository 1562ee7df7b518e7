"""shard_jit, sharding propagation and all_gather (global view), on both compilers."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import nxpy as nx
from nxpy.compilers import exla
from nxpy import P, pjrt
from nxpy.defn.sharding import specs as SH
from nxpy.layout import read_sharding
from nxpy.defn.sharding.collectives import all_gather
from nxpy.defn.shard_jit import shard_jit
from nxpy.stablehlo import parse

from helpers import COMPILERS, assert_contains, only

CASES = json.loads((Path(__file__).resolve().parent / "data/nx_sharding_cases.json")
                   .read_text())


def _mesh(spec):
    return nx.Mesh(spec["name"], tuple(spec["shape"]))


def _shardings(specs):
    return [{int(k): v for k, v in s.items()} for s in specs]


def per_device(mesh, tensors, shardings):
    """Per-device argument lists from global tensors."""
    parts = [SH.shard(t, mesh, s) for t, s in zip(tensors, shardings)]
    return [list(p) for p in zip(*parts)]


def _as_list(r):
    return [x.tolist() for x in r] if isinstance(r, tuple) else r.tolist()


# ----------------------------------------------------------------------------------------
# Conformance: Nx's sharding cases
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: c["name"])
def test_nx_sharding_case(case, compiler):
    mesh = _mesh(case["mesh"])
    prog = eval(case["program"], {"nx": nx, "all_gather": all_gather})
    t = case.get("type", "s32")
    args = [[nx.tensor(a, type=t) for a in dev] for dev in case["per_device_args"]]
    f = shard_jit(prog, mesh, input_shardings=_shardings(case["input_shardings"]),
                  compiler=compiler)
    res = f(args)
    assert len(res) == mesh.size
    for p, (r, want) in enumerate(zip(res, case["per_device_results"])):
        leaves = r if isinstance(r, tuple) else (r,)
        wants = want if isinstance(r, tuple) else [want]
        for leaf, w in zip(leaves, wants):
            assert leaf.device_id == p
            assert str(leaf.type) == t
            np.testing.assert_array_equal(
                np.asarray(leaf.to_numpy(), dtype=complex if t == "c64" else None),
                np.array(w, dtype=leaf.to_numpy().dtype))
    if compiler == "exla":
        module = parse(f.lower(args))
        for frag in case.get("mlir_must_contain", []):
            assert_contains(module, frag)


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: c["name"])
def test_evaluator_and_exla_agree_exactly(case):
    mesh = _mesh(case["mesh"])
    prog = eval(case["program"], {"nx": nx, "all_gather": all_gather})
    args = [[nx.tensor(a, type=case.get("type", "s32")) for a in dev]
            for dev in case["per_device_args"]]
    ins = _shardings(case["input_shardings"])
    ev = shard_jit(prog, mesh, input_shardings=ins, compiler="evaluator")
    ex = shard_jit(prog, mesh, input_shardings=ins, compiler="exla")
    a, b = ev(args), ex(args)
    assert ev.output_shardings == ex.output_shardings
    for ra, rb in zip(a, b):
        for x, y in zip(ra if isinstance(ra, tuple) else (ra,),
                        rb if isinstance(rb, tuple) else (rb,)):
            assert (x.shape, x.type, x.device_id) == (y.shape, y.type, y.device_id)
            np.testing.assert_array_equal(x.to_numpy(), y.to_numpy())


# ----------------------------------------------------------------------------------------
# Errors: Nx's messages, raised before anything reaches XLA
# ----------------------------------------------------------------------------------------
@pytest.fixture
def no_xla(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("reached XLA")
    monkeypatch.setattr(pjrt, "compile", boom)


MESH = None


def mesh22():
    global MESH
    if MESH is None:
        MESH = nx.Mesh("mesh", (2, 2))
    return MESH


def _args(n_dev=4, shapes=((4, 1), (4, 1))):
    return [[nx.iota(s) for s in shapes] for _ in range(n_dev)]


ERRORS = {
    "input_shardings given to a compile without a mesh":
        lambda: exla.to_mlir(lambda x: x, nx.iota((2, 2)), input_shardings=[{0: [0]}]),
    "input_shardings not a list (None)":
        lambda: shard_jit(lambda x: x, mesh22(), input_shardings=None),
    "2 arguments, 1 sharding":
        lambda: shard_jit(lambda x, y: x + y, mesh22(), input_shardings=[{0: [0]}],
                          compiler="exla")(_args()),
    "mesh axis 2 on a 2x2 mesh":
        lambda: shard_jit(lambda x: x, mesh22(),
                          input_shardings=[{0: [2]}])(_args(shapes=[(4, 1)])),
    "{0: [0], 1: [0]}":
        lambda: shard_jit(lambda x: x, mesh22(), input_shardings=[{0: [0], 1: [0]}])(
            _args(shapes=[(4, 1)])),
    "tensor dim -3 on a rank-2 tensor":
        lambda: shard_jit(lambda x: x, mesh22(),
                          input_shardings=[{-3: [0]}])(_args(shapes=[(4, 1)])),
    "tensor dim 3 on a rank-2 tensor":
        lambda: shard_jit(lambda x: x, mesh22(),
                          input_shardings=[{3: [0]}])(_args(shapes=[(4, 1)])),
    "3 per-device argument lists for a 4-device mesh":
        lambda: shard_jit(lambda x: x, mesh22(), input_shardings=[{0: [0]}])(_args(3, [(4, 1)])),
}


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("err", CASES["errors"], ids=lambda e: e["case"])
def test_nx_error_cases(err, compiler, no_xla):
    make = ERRORS[err["case"]]
    with pytest.raises((ValueError, TypeError), match=_re(err["message"])):
        make()


def _re(s):
    import re
    return re.escape(s)


@pytest.mark.parametrize("bad, message", [
    (({0: [0]},), "expected 2 input sharding configuration(s), got 1"),
    ([[0], {0: [0]}], "expected input sharding 0 to be a dict"),
    ([{0: "nope"}, {}], "is not an axis of mesh"),
    ([{0: [0], -2: [1]}, {}], "appears twice"),
])
def test_more_input_sharding_errors(bad, message, no_xla):
    f = shard_jit(lambda x, y: x + y, mesh22(), input_shardings=list(bad), compiler="exla")
    with pytest.raises((ValueError, TypeError), match=_re(message)):
        f(_args())


def test_shards_must_agree_in_shape_and_type(no_xla):
    f = shard_jit(lambda x: x, mesh22(), input_shardings=[{0: [0]}], compiler="exla")
    args = _args(shapes=[(4, 1)])
    args[2] = [nx.iota((4, 2))]
    with pytest.raises(ValueError, match=r"argument leaf 0 is s32\[4\]\[2\] on device 2 "
                                         r"but s32\[4\]\[1\] on device 0"):
        f(args)
    args[2] = [nx.iota((4, 1), type="f32")]
    with pytest.raises(ValueError, match="same shape and type"):
        f(args)
    args[2] = [nx.iota((4, 1)), nx.iota((4, 1))]
    with pytest.raises(ValueError, match="every device must get the same arguments"):
        f(args)


def test_split_not_divisible():
    with pytest.raises(ValueError, match=r"cannot shard dim 0 of tensor \(size 3\) "
                                         r"over mesh axes \['axis_0'\]"):
        SH.shard(nx.iota((3, 2)), mesh22(), {0: [0]})


def test_compiler_without_sharded_entry_point():
    class Plain(nx.defn.Compiler):
        name = "plain"
    with pytest.raises(ValueError, match="no sharded entry point"):
        shard_jit(lambda x: x, mesh22(), input_shardings=[{}], compiler=Plain())


def test_mesh_errors():
    n = pjrt.device_count()
    with pytest.raises(ValueError, match=rf"needs {n + 1} devices but the cpu client has "
                                         rf"{n}.*NXPY_CPU_DEVICES={n + 1}"):
        nx.Mesh("big", (n + 1,))
    with pytest.raises(ValueError, match="axis_names must be 2 distinct"):
        nx.Mesh("m", (2, 2), axis_names=("x", "x"))
    with pytest.raises(ValueError, match="needs 4 distinct devices"):
        nx.Mesh("m", (2, 2), devices=[0, 1, 2])
    with pytest.raises(ValueError, match="axis 2 is not valid for mesh with 2 axes"):
        mesh22().axis_index(2)


def test_cpu_device_count_from_environment():
    code = ("import nxpy as nx\nfrom nxpy import pjrt\nprint(pjrt.device_count())\n"
            "try:\n    nx.Mesh('m', (2, 2))\nexcept ValueError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "NXPY_CPU_DEVICES": "2"}, check=True).stdout
    assert out.splitlines()[0] == "2"
    assert "needs 4 devices but the cpu client has 2" in out and "NXPY_CPU_DEVICES=4" in out


def test_replicated_shards_must_agree_on_the_evaluator():
    mesh = mesh22()
    f = shard_jit(lambda x: x + 1, mesh, input_shardings=[{0: [0]}], compiler="evaluator")
    args = per_device(mesh, [nx.iota((4, 2))], [{0: [0]}])
    args[1] = [args[1][0] + 1]  # partitions 0 and 1 both hold block 0
    with pytest.raises(ValueError, match="partitions 0 and 1 must be equal"):
        f(args)
    g = shard_jit(lambda x: x + 1, mesh, input_shardings=[{0: [0]}], compiler="exla",
                  check_replicas=True)
    with pytest.raises(ValueError, match="partitions 0 and 1 must be equal"):
        g(args)


# ----------------------------------------------------------------------------------------
# Meshes, dims, types, containers
# ----------------------------------------------------------------------------------------
def _run_global(fun, mesh, tensors, shardings, compiler, **kw):
    f = shard_jit(fun, mesh, input_shardings=shardings, compiler=compiler, **kw)
    res = f(per_device(mesh, tensors, shardings))
    return f, res, SH.assemble(res, mesh, f.output_shardings)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("shape, axes, sharding", [
    ((4,), None, {0: [0]}),
    ((2, 2), ("x", "y"), {0: ["x"], -1: ["y"]}),
    ((2, 1, 2), None, {0: [0], 1: [1], 2: [2]}),
    ((2, 1, 2), None, {1: [2, 0]}),
])
def test_meshes(compiler, shape, axes, sharding):
    mesh = nx.Mesh("m", shape, axis_names=axes)
    x = nx.iota((8, 4, 2), type="f32")
    f, res, glob = _run_global(lambda a: nx.exp(a / 16.0) * 2, mesh, [x], [sharding], compiler)
    want = np.exp(np.arange(64, dtype=np.float32).reshape(8, 4, 2) / 16.0) * 2
    np.testing.assert_allclose(glob.to_numpy(), want, rtol=1e-6)
    norm = read_sharding(sharding, (8, 4, 2), mesh)
    assert f.output_sharding_dicts == norm.as_dict()
    assert f.output_shardings == norm.spec and read_sharding(
        f.output_shardings, (8, 4, 2), mesh) == norm  # a P the user could pass back
    assert [r.shape for r in res] == [norm.local_shape((8, 4, 2))] * mesh.size


@pytest.mark.parametrize("compiler", COMPILERS)
def test_named_dims(compiler):
    mesh = mesh22()
    x = nx.tensor(np.arange(16, dtype=np.float32).reshape(4, 4), names=["rows", "cols"])
    f, res, glob = _run_global(lambda a: a * 3, mesh, [x], [{"cols": [1], "rows": ["axis_0"]}],
                               compiler)
    assert f.output_shardings == P("axis_0", "axis_1")
    np.testing.assert_array_equal(glob.to_numpy(), x.to_numpy() * 3)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("type", [str(t) for t in nx.types.ALL_TYPES])
def test_all_types(compiler, type):
    mesh = mesh22()
    x = nx.as_type(nx.iota((4, 2)), type)
    f, res, glob = _run_global(lambda a: all_gather(nx.select(a, a, a), all_gather_dim=0), mesh,
                               [x], [{0: [0, 1]}], compiler)
    assert all(str(r.type) == type and r.shape == (4, 2) for r in res)
    np.testing.assert_array_equal(glob.to_numpy(), x.to_numpy())


@pytest.mark.parametrize("compiler", COMPILERS)
def test_container_outputs(compiler):
    mesh = mesh22()
    x, y = nx.iota((4, 4)), nx.iota((4, 1)) * 10
    f = shard_jit(lambda a, b: {"sum": a + b, "pair": (b * 2, all_gather(a, all_gather_dim=1))},
                  mesh, input_shardings=[{0: [0], 1: [1]}, {0: [0]}], compiler=compiler)
    res = f(per_device(mesh, [x, y], [{0: [0], 1: [1]}, {0: [0]}]))
    assert f.output_shardings == {"sum": P("axis_0", "axis_1"), "pair": (P("axis_0"), P("axis_0"))}
    assert f.output_sharding_dicts == {"sum": {0: [0], 1: [1]}, "pair": ({0: [0]}, {0: [0]})}
    glob = SH.assemble(res, mesh, f.output_shardings)
    np.testing.assert_array_equal(glob["sum"].to_numpy(), x.to_numpy() + y.to_numpy())
    np.testing.assert_array_equal(glob["pair"][0].to_numpy(), y.to_numpy() * 2)
    np.testing.assert_array_equal(glob["pair"][1].to_numpy(), x.to_numpy())
    assert {r["sum"].device_id for r in res} == {0, 1, 2, 3}


def test_output_shardings_option():
    mesh = mesh22()
    x = nx.iota((4, 4))
    for compiler in COMPILERS:
        f = shard_jit(lambda a: a + 1, mesh, input_shardings=[{0: [0]}],
                      output_shardings=[{1: [0, 1]}], compiler=compiler)
        res = f(per_device(mesh, [x], [{0: [0]}]))
        assert f.output_shardings == P(None, ("axis_0", "axis_1"))
        assert [r.tolist() for r in res] == [[[1], [5], [9], [13]], [[2], [6], [10], [14]],
                                              [[3], [7], [11], [15]], [[4], [8], [12], [16]]]
    with pytest.raises(ValueError, match="cannot be split over 4 devices"):
        shard_jit(lambda a: a[0:3], mesh, input_shardings=[{}], output_shardings=[{0: [0, 1]}])(
            per_device(mesh, [x], [{}]))


def test_eight_devices_2x4():
    mesh = nx.Mesh("m", (2, 4), axis_names=("x", "y"))
    x = nx.iota((4, 8), type="f32")
    for compiler in COMPILERS:
        f, res, glob = _run_global(lambda a: all_gather(a, all_gather_dim=1) * 2, mesh, [x],
                                   [{0: ["x"], 1: ["y"]}], compiler)
        assert f.output_shardings == P("x")
        np.testing.assert_array_equal(glob.to_numpy(), x.to_numpy() * 2)
    module = exla.to_mlir(lambda a: all_gather(a, all_gather_dim=1),
                          per_device(mesh, [x], [{1: ["y"]}]),
                          mesh=mesh, input_shardings=[{1: ["y"]}])
    m = parse(module)
    assert only(m, "stablehlo.all_gather").attrs["replica_groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert m.num_partitions == 8


# ----------------------------------------------------------------------------------------
# all_gather options and the module
# ----------------------------------------------------------------------------------------
def _module(fun, sharding, x=None):
    mesh = mesh22()
    x = x if x is not None else nx.iota((4, 4))
    return exla.to_mlir(fun, per_device(mesh, [x], [sharding]), mesh=mesh,
                        input_shardings=[sharding])


@pytest.mark.parametrize("sharding, groups", [
    ({0: [0]}, [[0, 2], [1, 3]]), ({0: [1]}, [[0, 1], [2, 3]]), ({0: [0, 1]}, [[0, 1, 2, 3]]),
    ({0: [1, 0]}, [[0, 2, 1, 3]]),
])
def test_replica_groups_follow_the_mesh(sharding, groups):
    m = parse(_module(lambda a: all_gather(a, all_gather_dim=0), sharding))
    ag = only(only(m, "sdy.manual_computation"), "stablehlo.all_gather")
    assert ag.attrs["replica_groups"] == groups
    assert ag.attrs["channel_handle"] == {"handle": 1, "type": 1}
    assert ag.attrs["use_global_device_ids"] is True
    assert ag.attrs["all_gather_dim"] == 0


def test_all_gather_identity_cases():
    m = parse(_module(lambda a: all_gather(a, all_gather_dim=1), {0: [0]}))
    assert m.find("stablehlo.all_gather") == []  # dim 1 is not sharded
    g = nx.defn.jit(lambda a: all_gather(a, {"all_gather_dim": 0}), compiler="exla")
    assert g(nx.iota((3,))).tolist() == [0, 1, 2]
    assert parse(exla.to_mlir(lambda a: all_gather(a, all_gather_dim=0), nx.iota((3,)))).find(
        "stablehlo.all_gather") == []


@pytest.mark.parametrize("compiler", COMPILERS)
def test_all_gather_explicit_axes_and_groups(compiler):
    mesh = mesh22()
    x = nx.iota((4, 4))
    sh = {0: [0, 1]}
    # gather only the minor axis: dim 0 stays split over axis_0
    f, res, glob = _run_global(lambda a: all_gather(a, all_gather_dim=0, axes=["axis_1"]), mesh,
                               [x], [sh], compiler)
    assert f.output_shardings == P("axis_0")
    np.testing.assert_array_equal(glob.to_numpy(), x.to_numpy())
    # explicit groups in another group order, and a channel id
    def fun(a):
        return all_gather(a, {"all_gather_dim": 0, "replica_groups": [[1, 3], [0, 2]],
                              "channel_id": 7})
    f, res, glob = _run_global(fun, mesh, [x], [{0: [0]}], compiler)
    np.testing.assert_array_equal(glob.to_numpy(), x.to_numpy())
    if compiler == "exla":
        ag = only(parse(f.lower(per_device(mesh, [x], [{0: [0]}]))), "stablehlo.all_gather")
        assert ag.attrs["replica_groups"] == [[1, 3], [0, 2]]
        assert ag.attrs["channel_handle"]["handle"] == 7


@pytest.mark.parametrize("opts, message", [
    ({}, "the all_gather_dim option is required"),
    ({"all_gather_dim": 2}, r"all_gather: all_gather_dim 2 is out of range for a tensor of rank 2"),
    ({"all_gather_dim": 0, "bogus": 1}, "unknown option 'bogus'"),
    ({"all_gather_dim": 0, "axes": ["axis_0"]}, "can only gather the minor-most"),
    ({"all_gather_dim": 0, "axes": [5]}, "axis 5 is not valid for mesh with 2 axes"),
    ({"all_gather_dim": 0, "replica_groups": [[0, 1], [2, 2]]}, "exactly once"),
    ({"all_gather_dim": 0, "replica_groups": [[0, 1, 2], [3]]}, "same size"),
    ({"all_gather_dim": 0, "replica_groups": [[2, 0], [3, 1]]},
     "in the order its shards are laid out"),
    ({"all_gather_dim": 0, "channel_id": 0}, "channel_id must be a positive integer"),
])
def test_all_gather_errors(opts, message, no_xla):
    with pytest.raises((ValueError, TypeError), match=message):
        _module(lambda a: all_gather(a, opts), {0: [0, 1]} if "axes" in opts else {0: [0]})


def test_all_gather_node_carries_normalised_options():
    mesh = mesh22()
    seen = {}

    def fun(a):
        r = all_gather(a, all_gather_dim=-2)
        seen["node"] = r.data
        return r
    shard_jit(fun, mesh, input_shardings=[{0: [1]}], compiler="evaluator")(
        per_device(mesh, [nx.iota((4, 2))], [{0: [1]}]))
    e = seen["node"]
    assert e.op == "all_gather" and len(e.args) == 2
    assert e.args[1] == {"all_gather_dim": 0, "axes": (1,), "replica_groups": [[0, 1], [2, 3]],
                         "channel_id": 1}


# ----------------------------------------------------------------------------------------
# Propagation rules
# ----------------------------------------------------------------------------------------
def _out_sharding(fun, shapes, shardings, mesh=None):
    mesh = mesh or mesh22()
    tensors = [nx.iota(s, type="f32") for s in shapes]
    f = shard_jit(fun, mesh, input_shardings=shardings, compiler="evaluator")
    f(per_device(mesh, tensors, shardings))
    shape = f.last.graph.outputs[0].shape  # the P reported means what the dict does
    assert read_sharding(f.output_shardings, shape, mesh) == read_sharding(
        f.output_sharding_dicts, shape, mesh)
    return f.output_sharding_dicts


@pytest.mark.parametrize("fun, shapes, shardings, want", [
    (lambda x: nx.reshape(x, (32,)), [(8, 4)], [{0: [0]}], {0: [0]}),
    (lambda x: nx.reshape(x, (4, 2, 4)), [(8, 4)], [{0: [0], 1: [1]}], {0: [0], 2: [1]}),
    (lambda x: nx.reshape(x, (32,)), [(8, 4)], [{1: [1]}], {}),
    # two axes on one dim dealt out to the dims it splits into, as JAX's partitioner does
    (lambda x: nx.reshape(x, (2, 4, 4)), [(8, 4)], [{0: [0, 1]}], {0: [0], 1: [1]}),
    (lambda x: nx.reshape(x, (8, 4)), [(2, 4, 4)], [{0: [0], 1: [1]}], {0: [0, 1]}),
    (lambda x: nx.new_axis(x, 0), [(8, 4)], [{0: [0]}], {1: [0]}),
    (lambda x: nx.sum(x, axes=[0]), [(8, 4)], [{0: [0], 1: [1]}], {0: [1]}),
    (lambda x: nx.sum(x, axes=[1], keep_axes=True), [(8, 4)], [{0: [0], 1: [1]}], {0: [0]}),
    (lambda x: nx.argmax(x, axis=1), [(8, 4)], [{0: [0], 1: [1]}], {0: [0]}),
    (lambda x, w: nx.dot(x, w), [(8, 4), (4, 6)], [{0: [0]}, {1: [1]}], {0: [0], 1: [1]}),
    (lambda x, w: nx.dot(x, w), [(8, 4), (4, 6)], [{0: [0]}, {1: [0]}], {0: [0]}),
    (lambda x, y: nx.dot(x, [2], [0], y, [1], [0]), [(2, 4, 4), (2, 4, 4)], [{0: [0]}, {2: [1]}],
     {0: [0], 2: [1]}),
    (lambda x: x[:, 0:2], [(8, 4)], [{0: [0], 1: [1]}], {0: [0]}),
    (lambda x: nx.pad(x, 0, [(0, 0, 0), (1, 1, 0)]), [(8, 4)], [{0: [0], 1: [1]}], {0: [0]}),
    (lambda x, y: nx.concatenate([x, y], axis=1), [(8, 4), (8, 4)], [{0: [0], 1: [1]}, {}],
     {0: [0]}),
    (lambda x: nx.broadcast(x, (2, 8, 4)), [(8, 4)], [{0: [1]}], {1: [1]}),
    (lambda x: nx.transpose(x), [(8, 4)], [{0: [0], 1: [1]}], {0: [1], 1: [0]}),
    (lambda x, y: x + y, [(8, 4), (4,)], [{0: [0]}, {0: [1]}], {0: [0], 1: [1]}),
    (lambda x, y: x + y, [(8, 4), (8, 4)], [{0: [0]}, {1: [0]}], {0: [0]}),
    (lambda x, y: x + y, [(8, 4), (8, 4)], [{0: [0]}, {0: [1]}], {}),  # a conflict: replicated
    (lambda x: nx.cond(nx.sum(x) > 0, lambda: x, lambda: -x), [(8, 4)], [{0: [0]}], {}),
    (lambda x: nx.window_max(x, (2, 1), padding="same"), [(8, 4)], [{0: [0]}], {0: [0]}),
    # rules derived from the ops' declared properties (nxpy.ops.core.PROPERTIES)
    (lambda x: nx.window_min(x, (2, 1), padding="same"), [(8, 4)], [{0: [0]}], {0: [0]}),
    (lambda x: nx.population_count(nx.as_type(x, "s32")), [(8, 4)], [{0: [0], 1: [1]}],
     {0: [0], 1: [1]}),
    (lambda x: nx.sort(x, axis=1), [(8, 4)], [{0: [0], 1: [1]}], {0: [0]}),
    (lambda x: nx.cumulative_sum(x, axis=0), [(8, 4)], [{0: [0], 1: [1]}], {1: [1]}),
    (lambda x: nx.real(nx.fft(x)), [(8, 4)], [{0: [0], 1: [1]}], {0: [0]}),
    # and registered for the op itself
    (lambda x: nx.reduce(x, 0.0, {"axes": [1]}, lambda a, b: a + b), [(8, 4)],
     [{0: [0], 1: [1]}], {0: [0]}),
    (lambda x: nx.window_reduce(x, 0.0, (1, 2), {"strides": (1, 2)}, lambda a, b: a + b),
     [(8, 4)], [{0: [0], 1: [1]}], {0: [0], 1: [1]}),
    (lambda x: nx.permute_by_key(nx.as_type(x, "s32"), x, axis=1), [(8, 4)],
     [{0: [0], 1: [1]}], {0: [0]}),
])
def test_propagation_rules(fun, shapes, shardings, want):
    assert _out_sharding(fun, shapes, shardings) == want


# ----------------------------------------------------------------------------------------
# Property: random programs, random shardings == the unsharded program
# ----------------------------------------------------------------------------------------
_UNARY = ["negate", "abs"]
_BINARY = ["add", "multiply", "subtract", "max"]


@st.composite
def _program(draw):
    mesh_axes = [0, 1]

    def sharding():
        used, out = set(), {}
        for d in range(2):
            choices = [a for a in mesh_axes if a not in used]
            axes = draw(st.lists(st.sampled_from(choices), unique=True,
                                 max_size=len(choices))) if choices else []
            if axes:
                out[d] = axes
                used.update(axes)
        return out
    steps = draw(st.lists(st.one_of(
        st.tuples(st.just("unary"), st.sampled_from(_UNARY)),
        st.tuples(st.just("binary"), st.sampled_from(_BINARY)),
        st.tuples(st.just("gather"), st.integers(0, 1)),
        st.tuples(st.just("sum"), st.integers(0, 1)),
        st.tuples(st.just("transpose"), st.just(0))), min_size=1, max_size=6))
    return [sharding(), sharding()], steps


def _interpret(steps):
    def fun(x, y):
        for kind, arg in steps:
            if kind == "unary":
                x = getattr(nx, arg)(x)
            elif kind == "binary":
                x = getattr(nx, arg)(x, y if y.shape == x.shape else nx.transpose(y))
            elif kind == "gather":
                x = all_gather(x, all_gather_dim=arg)
            elif kind == "sum":
                x = nx.sum(x, axes=[arg], keep_axes=True)
                x = x + nx.sum(y, axes=[arg], keep_axes=True) * 0 if x.shape == y.shape else x
            else:
                x = nx.transpose(x)
        return x, y * 2
    return fun


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_program(), st.sampled_from(COMPILERS))
def test_random_programs_match_unsharded_jit(program, compiler):
    shardings, steps = program
    mesh = mesh22()
    x = nx.tensor(np.arange(16, dtype=np.int32).reshape(4, 4) - 5)
    y = nx.tensor(np.arange(16, dtype=np.int32).reshape(4, 4)[::-1].copy() * 3)
    fun = _interpret(steps)
    want = nx.defn.jit(fun)(x, y)
    f, res, glob = _run_global(fun, mesh, [x, y], shardings, compiler)
    for g, w in zip(glob, want):
        np.testing.assert_array_equal(g.to_numpy(), w.to_numpy())


def test_mesh_error_when_jax_started_xla_first():
    code = ("import jax\njax.devices()\nimport nxpy as nx\n"
            "try:\n    nx.Mesh('m', (2, 2))\nexcept ValueError as e:\n    print(e)\n")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert "jax created its CPU client before nxpy" in out
    assert "--xla_force_host_platform_device_count=4" in out


def test_mesh_contexts_belong_to_their_thread():
    """A trace over a mesh in one thread is invisible to another thread's trace (the
    stack of mesh contexts is per thread)."""
    import threading
    from nxpy.defn.sharding.collectives import current_mesh, mesh_context
    mesh = nx.Mesh("m", (2,), axis_names=("a",), devices=[0, 1])
    entered, done, seen = threading.Event(), threading.Event(), []

    def other():
        entered.wait(10)
        seen.append(current_mesh())
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with mesh_context(mesh, view="local") as ctx:
        assert current_mesh() is ctx
        entered.set()
        done.wait(10)
    t.join(10)
    assert seen == [None]
    assert current_mesh() is None
