"""Sharded modules JAX prints, loaded by nxpy.stablehlo and run on both compilers against
JAX's own results: the modules stored under tests/data/sharded_jax/ (printed by jax
0.10.2 with dense replica groups, and by jax 0.12.0.1 with
``#stablehlo.replica_group_mesh_axes`` over a duplicated ``sdy.mesh``), the same programs
lowered live by the running jax, and the replica-group forms and duplicated meshes read
directly."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import jit
from nxpy.defn.sharding import specs as SH
from nxpy.layout import read_sharding
from nxpy.stablehlo import LoadError, StableHLOSyntaxError, UnsupportedOpError, load, parse
from nxpy.stablehlo.__main__ import main as cli_main
from nxpy.stablehlo.sharding import is_sharded, replica_groups
from nxpy.stablehlo.syntax import AxisRef, ReplicaGroupMeshAxes

import jax  # after nxpy started XLA (conftest), so both share the 8 host devices
from stablehlo_jax_cases import CASES, DATA, jax_mesh, lower_and_run

from helpers import COMPILERS, groups

VERSIONS = sorted(d.name for d in DATA.iterdir() if d.is_dir())
BY_NAME = {c[0]: c for c in CASES}


def _jax_version(v: str) -> tuple:
    return tuple(int(p) for p in v.split(".")[:3])


def _spec_dict(spec) -> dict:
    """A ``PartitionSpec`` as nxpy's ``{dim: [axes]}``."""
    return {i: [a] if isinstance(a, str) else list(a) for i, a in enumerate(spec)
            if a is not None}


def _stored(version, name):
    text = (DATA / version / f"{name}.mlir").read_text()
    data = np.load(DATA / version / f"{name}.npz")
    n_args = sum(k.startswith("arg") for k in data.files)
    n_outs = sum(k.startswith("out") for k in data.files)
    return text, [data[f"arg{i}"] for i in range(n_args)], [data[f"out{i}"] for i in range(n_outs)]


def _in_specs(case):
    """A case's argument specs (None: a host array) and result specs."""
    _, shape, names, build = case
    _, args, out_specs = build(jax_mesh(shape, names))
    return [s for _, s in args], out_specs


def run_module(text, args, in_specs, out_specs, compiler):
    """Runs a JAX-printed module under nxpy: ``shard_jit`` with the module's mesh and
    shardings when its arguments are sharded (returns each device's results, and the
    mesh), else ``jit`` (returns the global results, and None)."""
    prog = load(text)
    if not is_sharded(prog):
        outs = prog.jit(compiler)(*[nx.tensor(a) for a in args])
        return [outs] if not isinstance(outs, tuple) else list(outs), None
    mesh = prog.mesh()
    shards = [SH.shard(nx.tensor(a), mesh, _spec_dict(s) if s is not None else {})
              for a, s in zip(args, in_specs)]
    per_device = prog.shard_jit(compiler)([list(x) for x in zip(*shards)])
    return [list(r) if isinstance(r, (list, tuple)) else [r] for r in per_device], mesh


def check_results(got, mesh, want, out_specs, what, tol=1e-5):
    """nxpy's results equal JAX's: globally (``mesh`` None) or device by device (JAX's
    global results split as their ``out_specs`` lay them out over ``mesh``)."""
    if mesh is None:
        assert len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g.to_numpy(), w, rtol=tol, atol=tol,
                                       err_msg=f"{what}: result {i}")
        return
    for i, (w, spec) in enumerate(zip(want, out_specs)):
        parts = read_sharding(_spec_dict(spec), np.shape(w), mesh).shard_array(np.asarray(w))
        for p in range(mesh.size):
            g = got[p][i].to_numpy()
            assert g.shape == parts[p].shape, (what, i, p, g.shape, parts[p].shape)
            np.testing.assert_allclose(g, parts[p], rtol=tol, atol=tol,
                                       err_msg=f"{what}: result {i} on device {p}")


# ----------------------------------------------------------------------------------------
# The stored modules (each jax version's), on both compilers
# ----------------------------------------------------------------------------------------
def test_the_fixtures_cover_both_forms():
    assert {"0.10.2", "0.12.0.1"} <= set(VERSIONS)
    for version in VERSIONS:
        assert sorted(p.stem for p in (DATA / version).glob("*.mlir")) == sorted(BY_NAME)
    new = parse(_stored("0.12.0.1", "issue_2x2")[0])
    assert [m.name for m in new.meshes] == ["mesh", "mesh_0"]
    assert all(isinstance(op.attributes["replica_groups"], ReplicaGroupMeshAxes)
               for op in new.walk() if "replica_groups" in op.attributes)
    old = parse(_stored("0.10.2", "issue_2x2")[0])
    assert [m.name for m in old.meshes] == ["mesh"]
    assert not any(isinstance(op.attributes["replica_groups"], ReplicaGroupMeshAxes)
                   for op in old.walk() if "replica_groups" in op.attributes)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("version, name", [(v, c[0]) for v in VERSIONS for c in CASES])
def test_stored_module(version, name, compiler):
    text, args, want = _stored(version, name)
    in_specs, out_specs = _in_specs(BY_NAME[name])
    got, mesh = run_module(text, args, in_specs, out_specs, compiler)
    check_results(got, mesh, want, out_specs, f"{name} (jax {version}) on {compiler}")


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_both_versions_resolve_to_the_same_groups(name):
    """The dense groups jax 0.10.2 printed and the mesh axes jax 0.12 printed are the
    same device groups, op by op."""
    resolved = {v: groups(_stored(v, name)[0]) for v in VERSIONS}
    first = resolved[VERSIONS[0]]
    assert all(r == first for r in resolved.values()), resolved


# ----------------------------------------------------------------------------------------
# The same programs lowered by the running jax
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_live_module(name):
    text, args, want, out_specs = lower_and_run(BY_NAME[name])
    in_specs, _ = _in_specs(BY_NAME[name])
    for compiler in COMPILERS:
        got, mesh = run_module(text, args, in_specs, out_specs, compiler)
        check_results(got, mesh, want, out_specs, f"{name} (jax {jax.__version__}) on {compiler}")
    # the running jax computes what the stored fixtures recorded, with the same groups
    for version in VERSIONS:
        stored_text, stored_args, stored_want = _stored(version, name)
        for a, b in zip(args, stored_args):
            np.testing.assert_array_equal(a, b)
        for i, (a, b) in enumerate(zip(want, stored_want)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"result {i}")
        assert groups(text) == groups(stored_text), version
    if _jax_version(jax.__version__) >= (0, 12, 0):  # the live module is in jax 0.12's form
        assert _forms(text) == _forms(_stored("0.12.0.1", name)[0])
        assert len(parse(text).meshes) == len(parse(_stored("0.12.0.1", name)[0]).meshes)


def _forms(text) -> list:
    """The form of each op's replica groups: dense or mesh axes."""
    return [type(op.attributes["replica_groups"]).__name__ for op in parse(text).walk()
            if "replica_groups" in op.attributes]


# ----------------------------------------------------------------------------------------
# Replica groups in both forms, resolved by the importer
# ----------------------------------------------------------------------------------------
MESHES = '''module {
  sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  sdy.mesh @mesh_0 = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  sdy.mesh @flat = <["d"=8]>
  sdy.mesh @perm = <["x"=2, "y"=2], device_ids=[3, 1, 2, 0]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}], device_ids = dense<[3, 1, 2, 0]> : tensor<4xi64>}}
}'''  # noqa: E501 - MLIR as JAX prints it, an op a line


def _rg(text):
    """The ``replica_groups`` attribute of an all_reduce printed with ``text``."""
    return parse(f'''func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {{
  %0 = "stablehlo.all_reduce"(%a) <{{replica_groups = {text}, use_global_device_ids}}> ({{
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %1 = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %1 : tensor<f32>
  }}) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}}''').main.body.ops[0].attributes["replica_groups"]


def _axes(mesh, *refs):
    return ("#stablehlo.replica_group_mesh_axes<mesh = " + mesh + ", axes = ["
            + ", ".join(f"#stablehlo.axis_ref<name = \"{r}\">" if isinstance(r, str) else
                        f"#stablehlo.axis_ref<name = \"{r[0]}\", sub_axis_info = ({r[1]}){r[2]}>"
                        for r in refs) + "]>")


@pytest.mark.parametrize("text, want", [
    (_axes("@mesh_0", "x"), [[0, 4], [1, 5], [2, 6], [3, 7]]),
    (_axes("@mesh_0", "y"), [[0, 1, 2, 3], [4, 5, 6, 7]]),
    (_axes("@mesh", "x", "y"), [[0, 1, 2, 3, 4, 5, 6, 7]]),
    (_axes("@mesh", "y", "x"), [[0, 4, 1, 5, 2, 6, 3, 7]]),
    (_axes("@mesh"), [[p] for p in range(8)]),
    (_axes("@flat", ("d", 1, 2)), [[0, 4], [1, 5], [2, 6], [3, 7]]),  # the major half of d
    (_axes("@flat", ("d", 2, 2)), [[0, 2], [1, 3], [4, 6], [5, 7]]),
    (_axes("@flat", ("d", 4, 2)), [[0, 1], [2, 3], [4, 5], [6, 7]]),
    (_axes("@flat", ("d", 4, 2), ("d", 1, 2)), [[0, 4, 1, 5], [2, 6, 3, 7]]),  # minor part first
    (_axes("@mesh", ("y", 2, 2), "x"), [[0, 4, 1, 5], [2, 6, 3, 7]]),
    (_axes("@perm", "x"), [[3, 2], [1, 0]]),  # the mesh's device ids, laid out in its shape
    (_axes("#stablehlo.mesh<axes=[<name = \"x\", size = 2>, <name = \"y\", size = 2>], "
           "device_ids=dense<[3, 1, 2, 0]> : tensor<4xi64>>", "y"), [[3, 1], [2, 0]]),
    (_axes("#stablehlo.mesh<axes=[<name = \"x\", size = 4>]>", ("x", 2, 2)), [[0, 1], [2, 3]]),
    ("dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>", [[0, 4], [1, 5], [2, 6], [3, 7]]),
    ("dense<[[0, 1, 2], [3, 4, -1]]> : tensor<2x3xi64>", [[0, 1, 2], [3, 4]]),  # JAX's padding
])
def test_replica_groups_resolve(text, want):
    assert replica_groups(parse(MESHES), _rg(text)) == want


def test_the_mesh_axes_form_matches_jax_dense_groups_on_every_axis_subset():
    """For every ordered subset of the axes of 1- to 3-D meshes, the mesh-axes form
    resolves to the groups JAX's dense form holds (nx.Mesh.groups is JAX's rule)."""
    for shape in [(8,), (2, 4), (4, 2), (2, 2, 2)]:
        names = "abc"[:len(shape)]
        mesh = nx.Mesh("m", shape, axis_names=tuple(names))
        module = parse("module {\n  sdy.mesh @m = <[" +
                       ", ".join(f'"{n}"={k}' for n, k in zip(names, shape)) + "]>\n}")
        for k in range(len(shape) + 1):
            for axes in itertools.permutations(names, k):
                rg = ReplicaGroupMeshAxes("m", [AxisRef(a) for a in axes])
                assert replica_groups(module, rg) == mesh.groups(axes), (shape, axes)


@pytest.mark.parametrize("text, fragment", [
    (_axes("@nowhere", "x"), "expected @nowhere to name an sdy.mesh of the module (it has @mesh, "
                             "@mesh_0, @flat, @perm)"),
    (_axes("@mesh", "z"), "axis 'z' is not an axis of mesh"),
    (_axes("@flat", ("d", 3, 2)), "expected pre_size * size to divide the axis size"),
    (_axes("@flat", ("d", 1, 4), ("d", 2, 4)), "overlap"),
    (_axes("@mesh", "x", "x"), "overlap"),
])
def test_replica_group_errors_name_what_was_expected(text, fragment):
    with pytest.raises(ValueError, match="replica_group_mesh_axes") as e:
        replica_groups(parse(MESHES), _rg(text))
    assert fragment in str(e.value)


@pytest.mark.parametrize("text, fragment", [
    ("#stablehlo.replica_group_mesh_axes<axes = []>", "expected mesh = @name"),
    ("#stablehlo.replica_group_mesh_axes<mesh = @m, axes = [1]>",
     "expected axes = [#stablehlo.axis_ref<...>, ...]"),
    ("#stablehlo.replica_group_mesh_axes<mesh = @m, axes = [#stablehlo.axis_ref<name = x>]>",
     "expected name = \"axis\""),
    ("#stablehlo.replica_group_mesh_axes<mesh = @m, axes = [#stablehlo.axis_ref<name = \"x\", "
     "sub_axis_info = 2>]>", "expected sub_axis_info = (pre_size)size"),
    ("#stablehlo.replica_group_mesh_axes<mesh = #stablehlo.mesh<axes = [<name = \"x\">]>, "
     "axes = []>", "expected a mesh axis <name = \"x\", size = 2>"),
    ("#stablehlo.replica_group_mesh_axes<mesh = @m, axes = [], axes = []>", "each once"),
])
def test_malformed_mesh_axes_are_syntax_errors(text, fragment):
    with pytest.raises(StableHLOSyntaxError) as e:
        _rg(text)
    assert fragment in str(e.value)


def test_parsed_form_prints_back():
    text = _axes("@mesh_0", "x", ("y", 2, 2))
    assert str(_rg(text)) == text


def _module(mesh_lines, body, arg="tensor<4x8xf32>", local="tensor<2x2xf32>",
            out="tensor<4x8xf32>", mesh="mesh"):
    return f'''module @m attributes {{mhlo.num_partitions = 8 : i32}} {{
{mesh_lines}
  func.func public @main(%arg0: {arg} {{sdy.sharding = #sdy.sharding<@{mesh}, [{{"x"}}, {{"y"}}]>}}) -> ({out} {{sdy.sharding = #sdy.sharding<@{mesh}, [{{"x"}}, {{"y"}}]>}}) {{
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@{mesh}, [{{"x"}}, {{"y"}}]>] out_shardings=[<@{mesh}, [{{"x"}}, {{"y"}}]>] manual_axes={{"x", "y"}} (%arg1: {local}) {{
{body}
      sdy.return %1 : {local}
    }} : ({arg}) -> {out}
    return %0 : {out}
  }}
}}'''  # noqa: E501 - MLIR as JAX prints it, an op a line


_TWO = '''  sdy.mesh @mesh = <["x"=2, "y"=4]>
  sdy.mesh @mesh_0 = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}'''  # noqa: E501 - MLIR as JAX prints it, an op a line


def _reduce(groups_text, local="tensor<2x2xf32>"):
    return f'''      %1 = "stablehlo.all_reduce"(%arg1) <{{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = {groups_text}, use_global_device_ids}}> ({{
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }}) : ({local}) -> {local}'''  # noqa: E501 - MLIR as JAX prints it, an op a line


def _per_device(prog, x):
    mesh = prog.mesh(prog.module.main.args[0].sharding.mesh)
    return mesh, prog.shard_jit("evaluator")([[s] for s in SH.shard(nx.tensor(x), mesh,
                                                                     {0: ["x"], 1: ["y"]})])


@pytest.mark.parametrize("refs, axes, aig", [
    (["x"], ("x",), None), (["y", "x"], ("y", "x"), None),
    ([("y", 1, 2)], ("y",), [[0, 2], [1, 3]]), ([("y", 2, 2)], ("y",), [[0, 1], [2, 3]]),
])
def test_sub_axes_and_axis_orders_run_as_nxpy_collectives(refs, axes, aig):
    """A hand-written all_reduce over (sub-)axes is the nxpy psum over the axes whose
    groups those are (a sub-axis: axis_index_groups of its axis)."""
    prog = load(_module(_TWO, _reduce(_axes("@mesh_0", *refs)), local="tensor<2x2xf32>"))
    x = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    mesh, got = _per_device(prog, x)
    local = read_sharding({0: ["x"], 1: ["y"]}, x.shape, mesh).shard_array(x)
    for p in range(8):
        members = next(g for g in mesh.groups(axes, aig) if p in g)
        np.testing.assert_array_equal(got[p].to_numpy(), sum(local[q] for q in members))


def test_collective_broadcast_in_the_mesh_axes_form():
    body = ('''      %1 = "stablehlo.collective_broadcast"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = '''  # noqa: E501 - MLIR as JAX prints it, an op a line
            + _axes("@mesh_0", "y") + '''}> : (tensor<2x2xf32>) -> tensor<2x2xf32>''')
    prog = load(_module(_TWO, body))
    x = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    mesh, got = _per_device(prog, x)
    local = read_sharding({0: ["x"], 1: ["y"]}, x.shape, mesh).shard_array(x)
    for p in range(8):
        np.testing.assert_array_equal(got[p].to_numpy(), local[p - p % 4])


def test_groups_of_no_mesh_axes_are_named_with_their_form():
    prog = load(_module('  sdy.mesh @mesh = <["x"=2, "y"=4]>\n  sdy.mesh @odd = <["a"=4]>',
                        _reduce(_axes("@odd", ("a", 2, 2)))))
    with pytest.raises(UnsupportedOpError, match=r"replica groups \[\[0, 1\], \[2, 3\]\] \(from "
                       r"#stablehlo.replica_group_mesh_axes<mesh = @odd") as e:
        _per_device(prog, np.zeros((4, 8), np.float32))
    assert "are not the groups of any mesh axes" in str(e.value)


def test_unknown_mesh_in_replica_groups_is_a_load_error():
    prog = load(_module(_TWO, _reduce(_axes("@missing", "x"))))
    with pytest.raises(LoadError, match="expected @missing to name an sdy.mesh of the module"):
        _per_device(prog, np.zeros((4, 8), np.float32))


# ----------------------------------------------------------------------------------------
# Duplicated sdy.mesh definitions
# ----------------------------------------------------------------------------------------
def test_identical_meshes_are_one_nx_mesh():
    prog = load(_module(_TWO, _reduce(_axes("@mesh_0", "x")), mesh="mesh_0"))
    mesh = prog.mesh()
    assert (mesh.name, mesh.shape, mesh.axis_names) == ("mesh", (2, 4), ("x", "y"))
    assert prog.mesh("mesh_0") is mesh and prog.mesh("mesh") is mesh
    other = nx.Mesh("other", (2, 4), axis_names=("x", "y"), devices=list(range(7, -1, -1)))
    moved = prog.with_meshes({"mesh": other})
    assert moved.mesh("mesh_0") is other and moved.mesh() is other
    x = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    shards = [[s] for s in SH.shard(nx.tensor(x), other, {0: ["x"], 1: ["y"]})]
    got = prog.shard_jit("evaluator", mesh=other)(shards)
    want = read_sharding({0: ["x"], 1: ["y"]}, x.shape, other).shard_array(
        np.tile(x[:2] + x[2:], (2, 1)))
    for p in range(8):
        np.testing.assert_array_equal(got[p].to_numpy(), want[p])


@pytest.mark.parametrize("second", [
    'sdy.mesh @mesh_0 = <["x"=4, "y"=2]>',
    'sdy.mesh @mesh_0 = <["x"=2, "z"=4]>',
    'sdy.mesh @mesh_0 = <["x"=2, "y"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>',
])
def test_different_meshes_must_be_named(second):
    prog = load(_module('  sdy.mesh @mesh = <["x"=2, "y"=4]>\n  ' + second,
                        _reduce(_axes("@mesh_0", "x"))))
    with pytest.raises(LoadError, match="expected one sdy.mesh .or identical ones. to run the "
                                        "module over; it has 2 different ones") as e:
        prog.mesh()
    assert '@mesh = <["x"=2, "y"=4]>' in str(e.value)
    assert prog.mesh("mesh").shape == (2, 4)


def test_explicit_iota_device_ids_are_the_default_order():
    prog = load(_module('  sdy.mesh @mesh = <["x"=2, "y"=4]>\n  sdy.mesh @mesh_0 = <["x"=2, '
                        '"y"=4], device_ids=[0, 1, 2, 3, 4, 5, 6, 7]>',
                        _reduce(_axes("@mesh_0", "x"))))
    assert prog.mesh() is prog.mesh("mesh_0")


def test_cli_reads_jax_0_12_modules(capsys):
    path = str(DATA / "0.12.0.1" / "issue_2x2.mlir")
    assert cli_main(["--syntax", path]) == 0
    out = capsys.readouterr().out
    assert "sdy.mesh @mesh_0 = <[\"x\"=2, \"y\"=2]>" in out
    assert "'replica_groups': #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = " \
           "[#stablehlo.axis_ref<name = \"x\">]>" in out
    assert cli_main([path]) == 0  # the graph: groups resolved, over the module's one mesh
    out = capsys.readouterr().out
    assert "all_reduce c, axes: [0], groups: [[0, 2], [1, 3]]" in out
    assert "mesh: Mesh('mesh', [x=2, y=2])" in out


@pytest.mark.parametrize("compiler", COMPILERS)
def test_typed_prng_keys_and_the_axisless_mesh(compiler):
    """A program taking and returning typed keys (``jax.random.key``): JAX passes their
    u32 data and prints ``sdy.mesh @empty_mesh = <[]>`` with constraints over it, which
    say nothing: the module is an ordinary program, not a sharded one."""
    key = jax.random.key(3)

    def f(k):
        return jax.random.normal(k, (4,)), jax.random.split(k)
    text = jax.jit(f).lower(key).as_text()
    assert "@empty_mesh = <[]>" in text and "sdy.sharding_constraint" in text
    program = load(text)
    assert not is_sharded(program)
    data = np.asarray(jax.random.key_data(key))
    got = jit(program, compiler=compiler)(nx.tensor(data))
    want_normal, want_keys = f(key)
    np.testing.assert_allclose(got[0].to_numpy(), np.asarray(want_normal), rtol=1e-6)
    np.testing.assert_array_equal(got[1].to_numpy(), np.asarray(jax.random.key_data(want_keys)))
