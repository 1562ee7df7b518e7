"""shard_map (the local view) and the collectives, device for device against JAX."""
import json
from pathlib import Path

import numpy as np
import pytest

import nxpy as nx
from nxpy.compilers import exla
from nxpy.defn import (all_gather, all_slice, all_to_all, axis_index, collective_broadcast,
                       collective_permute, jit, pmax, pmean, pmin, ppermute, psum, psum_scatter,
                       reduce_scatter, shard_jit, shard_map, shift, all_reduce, while_loop)
from nxpy.defn.sharding import specs as SH
from nxpy.layout import read_sharding

import jax  # after nxpy started XLA (conftest), so both share the 8 host devices
from jax.sharding import Mesh as JMesh, PartitionSpec as P
from nxpy.stablehlo import parse

from helpers import COMPILERS, fragment, groups

CASES = json.loads((Path(__file__).resolve().parent / "data/collectives_2x2.json")
                   .read_text())["cases"]
_MESHES = {}


def mesh_of(shape, names):
    key = (tuple(shape), tuple(names))
    if key not in _MESHES:
        _MESHES[key] = nx.Mesh("mesh", tuple(shape), axis_names=tuple(names))
    return _MESHES[key]


def _axes(a):
    return tuple(a) if isinstance(a, list) else a


def nx_program(op, axes, kw):
    if op == "all_gather":
        return lambda a: all_gather(a, axes=axes, all_gather_dim=kw.get("axis", 0),
                                    tiled=kw.get("tiled", True),
                                    axis_index_groups=kw.get("axis_index_groups"))
    if op in ("psum", "pmax", "pmin", "pmean"):
        f = {"psum": psum, "pmax": pmax, "pmin": pmin, "pmean": pmean}[op]
        return lambda a: f(a, axes, axis_index_groups=kw.get("axis_index_groups"))
    if op == "psum_scatter":
        return lambda a: psum_scatter(a, axes, scatter_dimension=kw["scatter_dimension"],
                                      tiled=kw["tiled"])
    if op == "all_to_all":
        return lambda a: all_to_all(a, axes, kw["split_axis"], kw["concat_axis"], tiled=kw["tiled"])
    if op == "axis_index":
        return lambda a: a + axis_index(axes)
    if op == "ppermute":
        return lambda a: ppermute(a, axes, kw["perm"])
    raise KeyError(op)


def jax_program(op, axes, kw):
    lax = jax.lax
    if op == "all_gather":
        return lambda a: lax.all_gather(a, axes, axis=kw.get("axis", 0),
                                        tiled=kw.get("tiled", True),
                                        axis_index_groups=kw.get("axis_index_groups"))
    if op in ("psum", "pmax", "pmin", "pmean"):
        return lambda a: getattr(lax, op)(a, axes, axis_index_groups=kw.get("axis_index_groups"))
    if op == "psum_scatter":
        return lambda a: lax.psum_scatter(a, axes, scatter_dimension=kw["scatter_dimension"],
                                          tiled=kw["tiled"])
    if op == "all_to_all":
        return lambda a: lax.all_to_all(a, axes, kw["split_axis"], kw["concat_axis"],
                                        tiled=kw["tiled"])
    if op == "axis_index":
        return lambda a: a + lax.axis_index(axes)
    if op == "ppermute":
        return lambda a: lax.ppermute(a, axes, kw["perm"])
    raise KeyError(op)


def per_device_outputs(op, axes, kw, mesh, spec, x, compiler):
    """Runs the collective under shard_map; the output is laid out over all mesh axes on
    dim 0, so splitting the global result gives each partition's local output."""
    all_axes = nx.P(mesh.axis_names)
    f = shard_map(nx_program(op, axes, kw), mesh, in_specs=spec, out_specs=all_axes,
                  check_vma=False, compiler=compiler)
    return np.split(f(nx.tensor(x)).to_numpy(), mesh.size, axis=0)


def module_of(op, axes, kw, mesh, spec, x):
    f = shard_map(nx_program(op, axes, kw), mesh, in_specs=spec, out_specs=nx.P(mesh.axis_names),
                  check_vma=False)
    return exla.to_mlir(lambda a: f(a), nx.tensor(x))


def _spec(in_spec):
    return nx.P(*(_axes(s) for s in in_spec))


# ----------------------------------------------------------------------------------------
# The 64 recorded JAX cases on a 2x2 mesh
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['op']}-{c['axis_name']}-{c['kwargs']}")
def test_jax_recorded_case(case, compiler):
    mesh = mesh_of(case["mesh_shape"], case["axis_names"])
    shape = tuple(case["global_input_shape"])
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    got = per_device_outputs(case["op"], _axes(case["axis_name"]), case["kwargs"], mesh,
                             _spec(case["in_spec"]), x, compiler)
    for p, (g, w) in enumerate(zip(got, case["per_device"])):
        np.testing.assert_array_equal(g, np.array(w, dtype=np.float32), err_msg=f"partition {p}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['op']}-{c['axis_name']}-{c['kwargs']}")
def test_jax_recorded_groups(case):
    mesh = mesh_of(case["mesh_shape"], case["axis_names"])
    shape = tuple(case["global_input_shape"])
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    m = module_of(case["op"], _axes(case["axis_name"]), case["kwargs"], mesh,
                  _spec(case["in_spec"]), x)
    assert [(k, v) for _, k, v in groups(m)] == [fragment(f) for f in case["emitted"]]
    assert len(parse(m).find("sdy.manual_computation")) == 1


# ----------------------------------------------------------------------------------------
# Other meshes, checked against JAX run here
# ----------------------------------------------------------------------------------------
def _generated():
    out = []
    for shape, names in [((2, 4), ("x", "y")), ((4, 2), ("x", "y")), ((2, 2, 2), ("a", "b", "c"))]:
        n = len(names)
        axes_sets = [names[0], names[-1], tuple(names[:2]), tuple(reversed(names[:2]))]
        if n == 3:
            axes_sets += [names[1], (names[2], names[0]), tuple(names)]
        for axes in axes_sets:
            size = int(np.prod([shape[names.index(a)]
                                for a in (axes if isinstance(axes, tuple) else (axes,))]))
            ops = [("all_gather", {"axis": 0, "tiled": True}),
                   ("all_gather", {"axis": 1, "tiled": False}),
                   ("psum", {}), ("pmax", {}), ("pmean", {}),
                   ("psum_scatter", {"scatter_dimension": 1, "tiled": True}),
                   ("all_to_all", {"split_axis": 1, "concat_axis": 0, "tiled": True}),
                   ("axis_index", {})]
            # ppermute in mesh order only (see below)
            if axes == names[0] or axes == tuple(names[:2]):
                ops.append(("ppermute", {"perm": [(i, (i + 1) % size) for i in range(size)]}))
            if size == 4:
                ops.append(("psum", {"axis_index_groups": [[0, 3], [1, 2]]}))
            for op, kw in ops:
                out.append((shape, names, axes, op, kw))
    return out


_JAX_CACHE = {}


def _jax_mesh(shape, names):
    key = (shape, names)
    if key not in _JAX_CACHE:
        devs = np.empty(int(np.prod(shape)), dtype=object)
        devs[:] = jax.devices()[:devs.size]
        _JAX_CACHE[key] = JMesh(devs.reshape(shape), names)
    return _JAX_CACHE[key]


@pytest.mark.parametrize("shape, names, axes, op, kw", _generated(),
                         ids=lambda v: str(v).replace(" ", ""))
def test_against_jax_on_other_meshes(shape, names, axes, op, kw):
    mesh = mesh_of(shape, names)
    jmesh = _jax_mesh(shape, names)
    spec = (names[0], names[-1]) if len(names) == 2 else ((names[0], names[1]), names[2])
    x = np.arange(8 * 64, dtype=np.float32).reshape(8, 64) - 37.0
    jf = jax.jit(jax.shard_map(jax_program(op, axes, kw), mesh=jmesh, in_specs=P(*spec),
                               out_specs=P(names), check_vma=False))
    want = np.split(np.asarray(jf(x)), mesh.size, axis=0)
    for compiler in COMPILERS:
        got = per_device_outputs(op, axes, kw, mesh, spec, x, compiler)
        for p, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=f"{compiler}, partition {p}")
    # the groups nxpy emits are JAX's
    jtext = jf.lower(x).as_text()
    ours = module_of(op, axes, kw, mesh, spec, x)
    assert groups(jtext) == groups(ours)


# ----------------------------------------------------------------------------------------
# ppermute over axes named out of mesh order: consistent with axis_index
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("axes", [("x", "y"), ("y", "x")])
def test_permute_counts_like_axis_index(compiler, axes):
    mesh = mesh_of((2, 4), ("x", "y"))

    def body(a):
        k = nx.as_type(axis_index(axes), "f32")
        sent = ppermute(nx.broadcast(k, (1,)), axes, [(i, (i + 1) % 8) for i in range(8)])
        return nx.stack([nx.broadcast(k, (1,)), sent], axis=1)
    f = shard_map(body, mesh, in_specs=(None,), out_specs=nx.P(("x", "y")), check_vma=False,
                  compiler=compiler)
    got = f(nx.tensor([0.0])).to_numpy()
    for own, received in got:
        assert received == (own - 1) % 8  # the device before me in axis_index order sent to me


# ----------------------------------------------------------------------------------------
# The shard-dialect ops and collective_broadcast, against NumPy
# ----------------------------------------------------------------------------------------
def _blocks(x, mesh, spec):
    return read_sharding(spec, x.shape, mesh).shard_array(x)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_collective_broadcast(compiler):
    mesh = mesh_of((2, 4), ("x", "y"))
    x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
    f = shard_map(lambda a: collective_broadcast(a, "y", source=2), mesh, in_specs=nx.P(("x", "y")),
                  out_specs=nx.P(("x", "y")), check_vma=False, compiler=compiler)
    got = np.split(f(nx.tensor(x)).to_numpy(), 8)
    blocks = _blocks(x, mesh, (("x", "y"),))
    for p, g in enumerate(got):
        src = mesh.partition((mesh.coords(p)[0], 2))
        np.testing.assert_array_equal(g, blocks[src])
    assert "stablehlo.collective_broadcast" not in exla.to_mlir(lambda a: f(a), nx.tensor(x))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_all_slice_inverts_all_gather(compiler):
    mesh = mesh_of((2, 2), ("x", "y"))
    x = np.arange(4 * 6, dtype=np.int32).reshape(4, 6)
    f = shard_map(lambda a: all_slice(all_gather(a, axes="y", all_gather_dim=1), "y", 1), mesh,
                  in_specs=("x", "y"), out_specs=("x", "y"), compiler=compiler)
    np.testing.assert_array_equal(f(nx.tensor(x)).to_numpy(), x)
    g = shard_map(lambda a: all_slice(a, ("x", "y"), 0), mesh, in_specs=(None,),
                  out_specs=nx.P(("x", "y")), compiler=compiler)
    np.testing.assert_array_equal(g(nx.tensor(x)).to_numpy(), x)  # slices of a replicated value
    assert "all_gather" not in exla.to_mlir(lambda a: g(a), nx.tensor(x))


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("offset, rotate",
                         [(1, False), (-1, False), (1, True), (3, True), (2, False)])
def test_shift(compiler, offset, rotate):
    mesh = mesh_of((2, 4), ("x", "y"))
    x = np.arange(8 * 2, dtype=np.int32).reshape(8, 2) + 1
    f = shard_map(lambda a: shift(a, "y", offset, rotate=rotate), mesh, in_specs=nx.P(("x", "y")),
                  out_specs=nx.P(("x", "y")), check_vma=False, compiler=compiler)
    got = np.split(f(nx.tensor(x)).to_numpy(), 8)
    blocks = _blocks(x, mesh, (("x", "y"),))
    for p, g in enumerate(got):
        i, j = mesh.coords(p)
        src = j - offset
        if rotate:
            src %= 4
        want = blocks[mesh.partition((i, src))] if 0 <= src < 4 else np.zeros_like(blocks[p])
        np.testing.assert_array_equal(g, want, err_msg=f"partition {p}")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_untiled_reduce_scatter_and_all_to_all(compiler):
    mesh = mesh_of((2, 2), ("x", "y"))
    x = np.arange(2 * 2 * 3, dtype=np.float32).reshape(2, 2, 3)
    jmesh = _jax_mesh((2, 2), ("x", "y"))
    for nxf, jf in [
        (lambda a: reduce_scatter(a, "x", 0, tiled=False),
         lambda a: jax.lax.psum_scatter(a, "x", scatter_dimension=0, tiled=False)),
        (lambda a: all_to_all(a, "x", 0, 1),
         lambda a: jax.lax.all_to_all(a, "x", 0, 1, tiled=False)),
        (lambda a: all_to_all(a * (axis_index("x") + 1), "x", 1, 0),
         lambda a: jax.lax.all_to_all(a * (jax.lax.axis_index("x") + 1), "x", 1, 0, tiled=False)),
    ]:
        want = np.asarray(jax.jit(jax.shard_map(jf, mesh=jmesh, in_specs=P(),
                                                out_specs=P(("x", "y"),), check_vma=False))(x))
        got = shard_map(nxf, mesh, in_specs=(None,), out_specs=nx.P(("x", "y")), check_vma=False,
                        compiler=compiler)(nx.tensor(x)).to_numpy()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("type", ["s8", "u32", "s64", "f16", "bf16", "f64", "c64"])
def test_types(compiler, type):
    mesh = mesh_of((2, 2), ("x", "y"))
    x = nx.as_type(nx.iota((4, 4)), type)
    f = shard_map(lambda a: psum(all_gather(a, axes="x", all_gather_dim=0), "y"), mesh,
                  in_specs=("x", "y"), out_specs=(None, "y"), compiler=compiler)
    r = f(x)
    assert str(r.type) == type
    xs = x.to_numpy().astype(np.float64 if type != "c64" else np.complex128)
    want = np.concatenate([xs[:, :2] + xs[:, 2:]] * 2, axis=1)
    np.testing.assert_array_equal(r.to_numpy().astype(want.dtype), want)


# ----------------------------------------------------------------------------------------
# Specs, the varying-axes check, errors
# ----------------------------------------------------------------------------------------
def test_dict_specs_equal_tuple_specs():
    mesh = mesh_of((2, 2), ("x", "y"))
    x = nx.iota((4, 4))
    a = shard_map(lambda v: v * 2, mesh, in_specs=[{0: ["x"], 1: [1]}],
                  out_specs=[{0: [0], 1: ["y"]}])(x)
    b = shard_map(lambda v: v * 2, mesh, in_specs=("x", "y"), out_specs=P("x", "y"))(x)
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    np.testing.assert_array_equal(a.to_numpy(), x.to_numpy() * 2)


def test_varying_axes_check():
    mesh = mesh_of((2, 2), ("x", "y"))
    x = nx.iota((4, 4))
    bad = shard_map(lambda v: v + 1, mesh, in_specs=("x", "y"), out_specs=(None, "y"))
    with pytest.raises(ValueError, match=r"output 0 is declared replicated over mesh axes \['x'\]"):
        bad(x)
    with pytest.raises(ValueError, match=r"replicated over mesh axes \['y'\]"):
        shard_map(lambda v: v * axis_index("y"), mesh, in_specs=(None,), out_specs=(None,))(x)
    ok = shard_map(lambda v: psum(v, "x"), mesh, in_specs=("x", "y"), out_specs=(None, "y"))
    np.testing.assert_array_equal(ok(x).to_numpy(), x.to_numpy()[:2] + x.to_numpy()[2:])
    gathered = shard_map(lambda v: all_gather(v, axes="x", all_gather_dim=0), mesh,
                         in_specs=("x", "y"), out_specs=(None, "y"))
    np.testing.assert_array_equal(gathered(x).to_numpy(), x.to_numpy())
    # with the check off the program runs (the result is then the caller's responsibility)
    off = shard_map(lambda v: v + 1, mesh, in_specs=("x", "y"), out_specs=(None, "y"),
                    check_vma=False)
    assert off(x).shape == (2, 4)


@pytest.mark.parametrize("make, message", [
    (lambda m: shard_map(lambda v: psum(v, "z"), m, in_specs=("x",), out_specs=(None,)),
     "'z' is not an axis of mesh"),
    (lambda m: shard_map(lambda v: all_gather(v, axes="x", all_gather_dim=2), m, in_specs=("x",),
                         out_specs=(None,)), r"all_gather_dim 2 is out of range"),
    (lambda m: shard_map(lambda v: psum_scatter(v, "x", scatter_dimension=1, tiled=True), m,
                         in_specs=("x",), out_specs=(None,)), "not divisible by the group size 2"),
    (lambda m: shard_map(lambda v: psum(v, ("x", "y"), axis_index_groups=[[0, 1], [1, 2, 3]]), m,
                         in_specs=("x",), out_specs=(None,)), "groups of equal size"),
    (lambda m: shard_map(lambda v: ppermute(v, "x", [(0, 1), (0, 0)]), m, in_specs=("x",),
                         out_specs=("x",)), "at most once"),
    (lambda m: shard_map(lambda v: ppermute(v, "x", [(0, 2)]), m, in_specs=("x",),
                         out_specs=("x",)), r"outside \[0, 2\)"),
    (lambda m: shard_map(lambda v: all_to_all(v, "x", 1, 0), m, in_specs=("x",),
                         out_specs=("x",)), "must have the group size 2, got 3"),
    (lambda m: shard_map(lambda v: shift(v, ("x", "y"), 1), m, in_specs=("x",),
                         out_specs=("x",)), "one mesh axis"),
    (lambda m: shard_map(lambda v: collective_broadcast(v, "x", source=2), m, in_specs=("x",),
                         out_specs=("x",)), r"source must be an index in \[0, 2\)"),
    (lambda m: shard_map(lambda v: v, m, in_specs=[("x",), ("y",)], out_specs=("x",)),
     r"expected 1 in_specs \(one per argument\), got 2"),
    (lambda m: shard_map(lambda v: v, m, in_specs=("y", "x"), out_specs=("x",)),
     r"dim 1 of argument 0 \(v\) \(size 3\) is not divisible by 2"),
    (lambda m: shard_map(lambda v: shard_map(lambda w: w, m, in_specs=(None,),
                                             out_specs=(None,))(v),
                         m, in_specs=(None,), out_specs=(None,)), "cannot be nested"),
    (lambda m: jit(lambda v: psum(v, "x")), "called outside any mesh"),
    (lambda m: jit(lambda v: axis_index("x")), "inside a function run by nxpy.defn.shard_map"),
])
def test_errors(make, message):
    mesh = mesh_of((2, 2), ("x", "y"))
    with pytest.raises((ValueError, TypeError), match=message):
        make(mesh)(nx.iota((4, 3)))


def test_local_collective_in_the_global_view_is_an_error():
    mesh = mesh_of((2, 2), ("x", "y"))
    f = shard_jit(lambda v: psum(v, "x"), mesh, input_shardings=[{0: [0]}])
    with pytest.raises(ValueError, match=r"in the global view \(shard_jit\)"):
        f([[nx.iota((2, 2))]] * 4)


# ----------------------------------------------------------------------------------------
# Composition
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_shard_map_inside_shard_jit(compiler):
    mesh = mesh_of((2, 2), ("x", "y"))
    x = nx.iota((4, 4), type="f32")
    inner = shard_map(lambda a: psum(a, "x") * (axis_index("y") + 1), mesh, in_specs=("x", "y"),
                      out_specs=(None, "y"))
    f = shard_jit(lambda a: nx.sum(inner(a) * 2, axes=[0]), mesh,
                  input_shardings=[{0: ["x"], 1: ["y"]}], compiler=compiler)
    res = f([[s] for s in SH.shard(x, mesh, {0: [0], 1: [1]})])
    glob = SH.assemble(res, mesh, f.output_shardings)
    xs = x.to_numpy()
    col = xs[:2] + xs[2:]
    want = np.sum(np.concatenate([col[:, :2] * 1, col[:, 2:] * 2], axis=1) * 2, axis=0)
    np.testing.assert_array_equal(glob.to_numpy(), want)
    assert f.output_shardings == nx.P("y")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_local_all_gather_then_global_ops(compiler):
    mesh = mesh_of((2, 2), ("x", "y"))
    x = nx.tensor(np.arange(16, dtype=np.float32).reshape(4, 4))
    gather = shard_map(lambda a: all_gather(a, axes=("x", "y"), all_gather_dim=0, tiled=False),
                       mesh, in_specs=nx.P(("x", "y")), out_specs=(None, None, None))
    f = jit(lambda a: nx.dot(nx.reshape(gather(a), (4, 4)), nx.transpose(a)) + nx.sum(a),
            compiler=compiler)
    np.testing.assert_allclose(f(x).to_numpy(), x.to_numpy() @ x.to_numpy().T + 120, rtol=1e-6)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_ring_permute_in_while_loop_equals_psum(compiler):
    mesh = mesh_of((2, 4), ("x", "y"))
    ring = [(i, (i + 1) % 4) for i in range(4)]

    def ring_allreduce(a):
        def body(s):
            i, acc, buf = s
            buf = ppermute(buf, "y", ring)
            return i + 1, acc + buf, buf
        _, acc, _ = while_loop(lambda s: s[0] < 3, body, (0, a, a))
        return acc
    x = nx.tensor(np.arange(8 * 3, dtype=np.float32).reshape(8, 3) ** 1.5)
    spec = (("x", "y"), None)
    got = shard_map(ring_allreduce, mesh, in_specs=spec, out_specs=spec, check_vma=False,
                    compiler=compiler)(x)
    want = shard_map(lambda a: psum(a, "y"), mesh, in_specs=spec, out_specs=spec, check_vma=False,
                     compiler=compiler)(x)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-6)
    if compiler == "exla":
        m = exla.to_mlir(lambda a: shard_map(ring_allreduce, mesh, in_specs=spec, out_specs=spec,
                                             check_vma=False)(a), x)
        (loop,) = parse(m).find("stablehlo.while")
        assert len(loop.find("stablehlo.collective_permute")) == 1


def test_divergent_collectives_are_reported_by_the_evaluator():
    mesh = mesh_of((2, 2), ("x", "y"))
    f = shard_map(lambda a: nx.cond(axis_index("x") == 0, lambda: psum(a, "x"), lambda: a), mesh,
                  in_specs=("x",), out_specs=("x",), check_vma=False, compiler="evaluator")
    with pytest.raises(RuntimeError, match="on XLA this deadlocks"):
        f(nx.iota((4,)))


# ----------------------------------------------------------------------------------------
# Collectives under control flow whose path may differ between devices: check_vma rejects
# them while tracing, on every compiler (never run: on XLA they deadlock or mix values)
# ----------------------------------------------------------------------------------------
def _three_clauses(a):
    return nx.cond([(axis_index("x") == 0, lambda: a), (nx.sum(a) > 3, lambda: psum(a, "x")),
                    (True, lambda: -a)])


DIVERGENT_CONDS = [
    ("psum", lambda a: nx.cond(axis_index("x") == 0, lambda: psum(a, "x"), lambda: a),
     r"the cond at \S*test_collectives.py:\d+ has a predicate that varies along mesh axes "
     r"\['x'\] .* the on_true branch runs the collective all_reduce \(psum\) over mesh axes "
     r"\['x'\]: on XLA the devices of a group along \['x'\] would not all run it"),
    ("ppermute-on-false", lambda a: nx.cond(nx.sum(a) > 3, lambda: a,
                                            lambda: ppermute(a, "x", [(0, 1), (1, 0)])),
     r"the on_false branch runs the collective collective_permute \(ppermute\) over mesh "
     r"axes \['x'\]"),
    ("pred-over-xy-psum-over-y",
     lambda a: nx.cond(axis_index(("x", "y")) == 0, lambda: pmax(a, "y"), lambda: a),
     r"varies along mesh axes \['x', 'y'\] .* all_reduce \(pmax\) over mesh axes \['y'\]: "
     r"on XLA the devices of a group along \['y'\]"),
    ("all_gather-in-a-loop-in-a-branch",
     lambda a: nx.cond(nx.sum(a) > 3, lambda: nx.fori_loop(
         0, 2, lambda i, s: all_gather(s, axes="x", all_gather_dim=0)[:2], a), lambda: a),
     r"the cond at .* varies along mesh axes \['x'\] .* on_true branch runs the collective "
     r"all_gather over mesh axes \['x'\]"),
    ("cond-in-a-loop", lambda a: nx.fori_loop(
        0, 2, lambda i, s: nx.cond(nx.sum(s) > 3, lambda: psum(s, ("x", "y")), lambda: s), a),
     r"the cond at .* varies along mesh axes \['x'\] .* all_reduce \(psum\) over mesh axes "
     r"\['x', 'y'\]"),
    ("three-clauses", _three_clauses, r"and branch 1 runs the collective all_reduce \(psum\)"),
]


def _trace_or_run(compiler, body):
    """The Evaluator runs the shard_map; EXLA only lowers it (to_mlir), so that a program
    the check missed fails the test instead of hanging XLA (XLA:CPU kills the process
    after 40 s)."""
    mesh = mesh_of((2, 2), ("x", "y"))
    x = nx.tensor([1.0, 2.0, 3.0, 4.0])
    if compiler == "exla":
        return exla.to_mlir(lambda a: shard_map(body, mesh, in_specs=nx.P("x"),
                                                out_specs=nx.P("x"))(a), x)
    return shard_map(body, mesh, in_specs=nx.P("x"), out_specs=nx.P("x"), compiler=compiler)(x)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("body, message", [c[1:] for c in DIVERGENT_CONDS],
                         ids=[c[0] for c in DIVERGENT_CONDS])
def test_collective_under_a_varying_cond_is_an_error(compiler, body, message):
    with pytest.raises(ValueError, match=message) as info:
        _trace_or_run(compiler, body)
    assert "Fix: make the predicate the same on every device of a group" in str(info.value)
    assert "or move the collective out of the cond" in str(info.value)


def _varying_trips(a):
    """A loop whose trip count differs between the devices of an "x" group, around psum."""
    n = nx.as_type(nx.sum(a), "s32")
    return while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, psum(s[1], "x") * 0.5),
                      (0, a))[1]


def _varying_condition_with_psum(a):
    return while_loop(lambda s: nx.sum(psum(s, "x")) + nx.as_type(axis_index("x"), "f32") < 50,
                      lambda s: s * 2.0, a)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("body, part", [(_varying_trips, "body"),
                                        (_varying_condition_with_psum, "condition")],
                         ids=["in-the-body", "in-the-condition"])
def test_collective_under_a_varying_while_loop_is_an_error(compiler, body, part):
    message = (r"the while_loop at \S*test_collectives.py:\d+ has a condition that varies "
               r"along mesh axes \['x'\] \(devices may run different numbers of "
               rf"iterations\), and its {part} runs the collective all_reduce \(psum\) over "
               r"mesh axes \['x'\].* Fix: make the condition the same on every device of a "
               r"group .* pmax\(n, 'x'\)\), or move the collective out of the loop")
    with pytest.raises(ValueError, match=message):
        _trace_or_run(compiler, body)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_collectives_under_uniform_control_flow_run(compiler):
    """Predicates made uniform over the collective's axes, or varying along other axes
    only, pass the check and run, with the same results on both compilers."""
    mesh = mesh_of((2, 2), ("x", "y"))
    x = nx.tensor([1.0, 2.0, 3.0, 4.0])          # "x" shards [1, 2] and [3, 4]

    def run(body, out_specs=nx.P("x")):
        return shard_map(body, mesh, in_specs=nx.P("x"), out_specs=out_specs,
                         compiler=compiler)(x).tolist()
    assert run(lambda a: nx.cond(pmax(nx.sum(a), "x") > 4, lambda: psum(a, "x"),
                                 lambda: a)) == [4.0, 6.0, 4.0, 6.0]
    assert run(lambda a: nx.cond(axis_index("x") == 0, lambda: psum(a, "y"),
                                 lambda: -a)) == [2.0, 4.0, -3.0, -4.0]

    def uniform_trips(a):
        n = pmax(nx.as_type(nx.sum(a), "s32"), "x")        # 7 on every device
        return while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, psum(s[1], "x") * 0.5 + 1),
                          (0, a))[1]
    assert run(uniform_trips) == [9.0, 10.0, 9.0, 10.0]

    def trips_along_y(a):                                   # 1 or 2 trips, psum over "x"
        n = axis_index("y") + 1
        return while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, psum(s[1], "x") * 0.5 + 1),
                          (0, a))[1]
    assert run(trips_along_y, nx.P(("x", "y"))) == [3.0, 4.0, 4.0, 5.0] * 2


def test_check_vma_false_runs_a_divergent_cond_as_xla_and_jax_do():
    """With check_vma=False (docs/sharding.md): EXLA runs what XLA runs, here a psum in
    each branch that combines the values of devices on different paths, as JAX does; the
    Evaluator raises. (A collective in one branch only would deadlock XLA: not run.)"""
    mesh = mesh_of((2, 2), ("x", "y"))
    x = np.arange(1, 5, dtype=np.float32) * 10

    def body(a):
        return nx.cond(axis_index("x") == 0, lambda: psum(a, "x"), lambda: psum(a * 3, "x"))

    def jbody(a):
        return jax.lax.cond(jax.lax.axis_index("x") == 0, lambda: jax.lax.psum(a, "x"),
                            lambda: jax.lax.psum(a * 3, "x"))
    with pytest.raises(ValueError, match="has a predicate that varies"):
        shard_map(body, mesh, in_specs=nx.P("x"), out_specs=nx.P("x"), compiler="exla")(x)
    want = np.asarray(jax.jit(jax.shard_map(jbody, mesh=_jax_mesh((2, 2), ("x", "y")),
                                            in_specs=P("x"), out_specs=P("x"),
                                            check_vma=False))(x))
    got = shard_map(body, mesh, in_specs=nx.P("x"), out_specs=nx.P("x"), check_vma=False,
                    compiler="exla")(nx.tensor(x)).to_numpy()
    np.testing.assert_array_equal(got, want)
    assert got.tolist() == [100.0, 140.0, 100.0, 140.0]     # 10 + 3 * 30, 20 + 3 * 40
    with pytest.raises(RuntimeError, match="on XLA this deadlocks"):
        shard_map(body, mesh, in_specs=nx.P("x"), out_specs=nx.P("x"), check_vma=False,
                  compiler="evaluator")(nx.tensor(x))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_per_device_cond_without_collectives(compiler):
    mesh = mesh_of((2, 2), ("x", "y"))
    f = shard_map(lambda a: nx.cond(axis_index("x") == 0, lambda: a * 10, lambda: -a), mesh,
                  in_specs=("x",), out_specs=("x",), compiler=compiler)
    assert f(nx.tensor([1, 2, 3, 4])).tolist() == [10, 20, -3, -4]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_captured_outer_values(compiler):
    mesh = mesh_of((2, 2), ("x", "y"))

    def g(a, b):
        return shard_map(lambda v: v + b, mesh, in_specs=("x",), out_specs=("x",))(a)
    out = jit(g, compiler=compiler)(nx.tensor([1.0, 2.0, 3.0, 4.0]), nx.tensor(100.0))
    assert out.tolist() == [101.0, 102.0, 103.0, 104.0]


def test_all_reduce_ops_and_alias_names():
    mesh = mesh_of((2, 2), ("x", "y"))
    x = nx.tensor(np.array([[3, -1], [2, 7]], dtype=np.int32))
    for op, want in [("sum", [5, 6]), ("max", [3, 7]), ("min", [2, -1])]:
        f = shard_map(lambda a: all_reduce(a, "x", op), mesh, in_specs=("x",), out_specs=(None,))
        assert f(x).tolist() == [want]
    with pytest.raises(ValueError, match="op must be one of"):
        shard_map(lambda a: all_reduce(a, "x", "prod"), mesh, in_specs=("x",), out_specs=(None,))(x)
    assert collective_permute is not None and reduce_scatter is not None
