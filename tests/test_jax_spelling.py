"""JAX's current spelling of sharding (issue 45 items 1-3) beside Nx's, against JAX: the context
mesh (``make_mesh``, ``Mesh(devices, axis_names)``, ``set_mesh`` and ``with mesh:``, bare ``P``
wherever a sharding is taken), ``shard_map`` in JAX's keyword and decorator forms with the mesh
from context, and JAX's signatures of ``all_gather``, ``axis_size``, ``cond`` with operands and
``mesh.shape``. Values and layouts are compared with JAX running the same program, on an Auto
mesh (explicit sharding: tests/test_explicit_sharding.py), on both compilers."""
import threading

import numpy as np
import pytest

import nxpy as nx
import nxpy.numpy as xnp
from nxpy import P
from nxpy.defn import (all_gather, axis_index, axis_size, jit, psum, shard_map,
                       with_sharding_constraint)

from helpers import COMPILERS, close
from jax_tutorials import shard_layout

import jax  # after nxpy started XLA (conftest), so both share the host devices
import jax.numpy as jnp
from jax.sharding import AxisType as JAxisType, PartitionSpec as JP


def jmesh(shape, names):
    return jax.make_mesh(shape, names, axis_types=(JAxisType.Auto,) * len(shape),
                         devices=jax.devices()[:int(np.prod(shape))])


def amesh(shape, names, **kw):
    return nx.make_mesh(shape, names, axis_types=(nx.AxisType.Auto,) * len(shape), **kw)


def x44():
    return np.arange(32, dtype=np.float32).reshape(8, 4)


# ----------------------------------------------------------------------------------------
# Meshes as JAX makes them
# ----------------------------------------------------------------------------------------
def test_make_mesh_and_jax_mesh_constructor_build_the_mesh_jax_does():
    m, j = amesh((2, 4), ("x", "y")), jmesh((2, 4), ("x", "y"))
    e, je = nx.make_mesh((2, 4), ("x", "y")), jax.make_mesh((2, 4), ("x", "y"))
    assert [t.name for t in e.axis_types] == [t.name for t in je.axis_types] == ["Explicit"] * 2
    assert m.axis_names == j.axis_names and dict(m.shape) == dict(j.shape)
    assert m.shape["y"] == j.shape["y"] == 4 and m.axis_sizes == j.axis_sizes == (2, 4)
    assert list(m.shape.items()) == list(j.shape.items()) and m.shape == (2, 4)
    assert m.devices == tuple(d.id for d in j.devices.flat)
    assert m.axis_types == (nx.AxisType.Auto,) * 2
    devs = nx.pjrt.devices()
    assert nx.Mesh(np.array(devs[:4]).reshape(2, 2), ("a", "b")).devices == (0, 1, 2, 3)
    assert nx.Mesh(devs[4:6], "a").devices == (4, 5) == nx.Mesh([4, 5], ("a",)).devices
    assert nx.make_mesh((2,), ("a",), devices=devs[6:]).devices == (6, 7)
    assert amesh((2,), ("a",)) == nx.Mesh(devs[:2], "a") != nx.Mesh(devs[2:4], "a")
    assert nx.make_mesh((2,), ("a",)) != nx.Mesh(devs[:2], "a")        # axis types differ
    with pytest.raises(KeyError, match="'z' is not an axis of the mesh"):
        m.shape["z"]
    with pytest.raises(ValueError, match="devices has 2 dims .* names 1"):
        nx.Mesh(np.array(devs[:4]).reshape(2, 2), ("a",))
    with pytest.raises(TypeError, match="expected each device to be a device"):
        nx.Mesh(["cpu0", "cpu1"], "a")
    with pytest.raises(ValueError, match="needs 4 devices, devices has 2"):
        nx.make_mesh((4,), ("a",), devices=devs[:2])
    with pytest.raises(TypeError, match="axis_types to be 1 nx.AxisType"):
        nx.make_mesh((2,), ("a",), axis_types=("Auto",))
    with pytest.raises(NotImplementedError, match="a mesh of AxisType.Manual axes"):
        nx.make_mesh((2,), ("a",), axis_types=(nx.AxisType.Manual,))


def test_set_mesh_is_a_thread_local_nestable_setter_and_context_manager():
    a, b = nx.make_mesh((2,), ("i",)), nx.make_mesh((4,), ("i",))
    assert nx.get_mesh() is None
    with nx.set_mesh(a) as got:
        assert got is a and nx.get_mesh() is a
        with b:                                          # `with mesh:` nests too
            assert nx.get_mesh() is b
            seen = []
            t = threading.Thread(target=lambda: seen.append(nx.get_mesh()))
            t.start()
            t.join()
            assert seen == [None]                        # another thread: its own
        assert nx.get_mesh() is a
        with nx.set_mesh(None):
            assert nx.get_mesh() is None
        assert nx.get_mesh() is a
    assert nx.get_mesh() is None
    with nx.set_mesh(None):
        nx.set_mesh(a)                                   # the setter, as jax.set_mesh(mesh)
        assert nx.get_mesh() is a
    assert nx.get_mesh() is None
    with pytest.raises(TypeError, match="set_mesh: expected mesh to be an nx.Mesh"):
        nx.set_mesh("mesh")


# ----------------------------------------------------------------------------------------
# A bare P laid over the context mesh
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", [("x",), ("x", "y"), (None, "y"), (("x", "y"),), ()])
def test_device_put_of_a_bare_p_lays_it_out_as_jax_does(spec):
    m, j = amesh((2, 2), ("x", "y")), jmesh((2, 2), ("x", "y"))
    with nx.set_mesh(m):
        got = nx.device_put(x44(), P(*spec))
        from_tensor = nx.device_put(nx.tensor(x44()), P(*spec))
    with jax.set_mesh(j):
        want = jax.device_put(x44(), JP(*spec))
    for g in (got, from_tensor):
        close(g, want, 0, 0)
        assert shard_layout(g) == shard_layout(want)


def test_device_put_to_a_device_object_and_errors_without_a_mesh():
    y = nx.device_put(x44(), nx.pjrt.devices()[3])
    assert y.addressable_shards[0].device_id == 3
    close(y, x44(), 0, 0)
    with pytest.raises(ValueError, match=r"names no mesh and no mesh is set: .*nx.set_mesh"):
        nx.device_put(x44(), P("x"))
    with pytest.raises(TypeError, match="device_put: expected the sharding of x"):
        nx.device_put(x44(), "x")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_jit_shardings_and_constraints_as_bare_p_take_the_context_mesh(compiler):
    m, j = amesh((2, 2), ("x", "y")), jmesh((2, 2), ("x", "y"))

    def body(a):
        return with_sharding_constraint(xnp.sin(a) * 2, P(None, "y")) + 1

    def jbody(a):
        return jax.lax.with_sharding_constraint(jnp.sin(a) * 2, JP(None, "y")) + 1

    f = jit(lambda a: body(a) * 3, compiler=compiler, in_shardings=P("x"),
            out_shardings=P("y", "x"))
    g = jit(lambda a: body(a), compiler=compiler)
    with jax.set_mesh(j):
        want_f = jax.jit(lambda a: jbody(a) * 3, in_shardings=JP("x"),
                         out_shardings=JP("y", "x"))(x44())
        want_g = jax.jit(jbody)(jax.device_put(x44(), JP("x")))
    with nx.set_mesh(m):
        got_f = f(x44())
        got_g = g(nx.device_put(x44(), P("x")))
    close(got_f, want_f)
    close(got_g, want_g)
    assert shard_layout(got_f) == shard_layout(want_f)
    assert got_g.sharding.spec == P(None, "y")
    # the context mesh is part of a call's key: another mesh traces again, none reads none
    with nx.set_mesh(amesh((4,), ("x",), devices=nx.pjrt.devices()[4:])) as m4:
        with pytest.raises(ValueError, match="'y' is not an axis of mesh"):
            f(x44())
    n = f.trace_count
    with nx.set_mesh(m):
        f(x44())
    assert f.trace_count == n and m4 is not m
    with pytest.raises(ValueError, match="in_shardings/out_shardings given as P .* set a "
                                         "context mesh"):
        f(x44())
    with pytest.raises(ValueError, match="with_sharding_constraint: .* no mesh is set"):
        g(x44())


def test_make_array_from_process_local_data_takes_a_bare_p():
    m, j = amesh((2, 2), ("x", "y")), jmesh((2, 2), ("x", "y"))
    with nx.set_mesh(m):
        got = nx.distributed.make_array_from_process_local_data(P("y"), x44())
    with jax.set_mesh(j):
        want = jax.make_array_from_process_local_data(JP("y"), x44())
    close(got, want, 0, 0)
    assert shard_layout(got) == shard_layout(want)


# ----------------------------------------------------------------------------------------
# shard_map as JAX writes it
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_shard_map_keyword_and_decorator_forms_with_the_mesh_from_context(compiler):
    m, j = amesh((4,), ("i",)), jmesh((4,), ("i",))

    with nx.set_mesh(m):
        @jit
        @shard_map(in_specs=P("i"), out_specs=P())
        def total(a):
            return psum(xnp.sum(a, axis=0, keepdims=True) * (axis_index("i") + 1), "i")

        kw = shard_map(lambda a: a * axis_size("i"), in_specs=P("i"), out_specs=P("i"),
                       compiler=compiler)
        got = total(x44()), kw(x44())
    with jax.set_mesh(j):
        @jax.jit
        @jax.shard_map(in_specs=JP("i"), out_specs=JP())
        def jtotal(a):
            return jax.lax.psum(jnp.sum(a, axis=0, keepdims=True) * (jax.lax.axis_index("i") + 1),
                                "i")
        want = jtotal(x44()), jax.shard_map(lambda a: a * jax.lax.axis_size("i"),
                                            in_specs=JP("i"), out_specs=JP("i"))(x44())
    close(got, want)
    # Nx's positional form is the same program
    close(shard_map(lambda a: a * axis_size("i"), m, P("i"), P("i"), compiler=compiler)(x44()),
          want[1])


def test_shard_map_errors_name_what_is_missing():
    m = amesh((2,), ("i",))
    with pytest.raises(ValueError, match="shard_map: no mesh: pass mesh=, or set a context"):
        shard_map(lambda a: a, in_specs=P("i"), out_specs=P("i"))(x44())
    with pytest.raises(TypeError, match="shard_map: out_specs is missing"):
        shard_map(lambda a: a, m, P("i"))
    with pytest.raises(TypeError, match="in_specs was not given, .* AxisType.Explicit"):
        shard_map(lambda a: a, mesh=m, out_specs=P("i"))(x44())
    with pytest.raises(NotImplementedError, match="makes only some mesh axes manual"):
        shard_map(lambda a: a, mesh=amesh((2, 2), ("i", "j")), in_specs=P("i"),
                  out_specs=P("i"), axis_names={"i"})
    # JAX: the same call on an Auto mesh is a TypeError too
    with pytest.raises(TypeError, match="in_specs"):
        jax.shard_map(lambda a: a, mesh=jmesh((2,), ("i",)), out_specs=JP("i"))(x44())


# ----------------------------------------------------------------------------------------
# JAX's signatures of all_gather, axis_size, cond and mesh.shape
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"tiled": True}, {"axis": 1, "tiled": True},
                                {"axis": 2}])
def test_all_gather_called_jax_s_way_has_jax_s_defaults(compiler, kw):
    m, j = amesh((2, 2), ("i", "j")), jmesh((2, 2), ("i", "j"))
    x = x44()
    if kw.get("axis") == 2 and kw.get("tiled"):
        pytest.skip("axis 2 exists only untiled")
    got = shard_map(lambda a: all_gather(a, "i", **kw), m, in_specs=P("i", "j"),
                    out_specs=P(None, "j") if kw.get("tiled") or kw.get("axis", 0) == 0
                    else P(None, None, "j"), check_vma=False, compiler=compiler)(x)
    spec = JP(None, "j") if kw.get("tiled") or kw.get("axis", 0) == 0 else JP(None, None, "j")
    want = jax.shard_map(lambda a: jax.lax.all_gather(a, "i", **kw), mesh=j,
                         in_specs=JP("i", "j"), out_specs=spec, check_vma=False)(x)
    close(got, want, 0, 0)
    # over two axes, and Nx's options form keeps Nx's defaults (tiled)
    got2 = shard_map(lambda a: all_gather(a, ("i", "j"), tiled=True), m, in_specs=P(("i", "j")),
                     out_specs=P(), check_vma=False, compiler=compiler)(x)
    want2 = jax.shard_map(lambda a: jax.lax.all_gather(a, ("i", "j"), tiled=True), mesh=j,
                          in_specs=JP(("i", "j")), out_specs=JP(), check_vma=False)(x)
    close(got2, want2, 0, 0)
    nx_form = shard_map(lambda a: all_gather(a, all_gather_dim=0, axes=["i"]), m,
                        in_specs=P("i"), out_specs=P(), check_vma=False, compiler=compiler)(x)
    close(nx_form, x, 0, 0)


def test_all_gather_and_axis_size_errors():
    m = amesh((2,), ("i",))
    with pytest.raises(TypeError, match="unexpected keyword argument all_gather_dim"):
        shard_map(lambda a: all_gather(a, "i", all_gather_dim=0), m, P("i"), P())(x44())
    with pytest.raises(ValueError, match="axis_size: axis 'i' is not bound"):
        axis_size("i")
    with pytest.raises(ValueError, match="'k' is not an axis"):
        shard_map(lambda a: a * axis_size("k"), m, P("i"), P("i"))(x44())


@pytest.mark.parametrize("compiler", COMPILERS)
def test_cond_with_operands_is_jax_s_lax_cond(compiler):
    def f(p, a, b):
        return nx.cond(p > 0, lambda u, v: u * v + 1, lambda u, v: u - v, a, b)

    def jf(p, a, b):
        return jax.lax.cond(p > 0, lambda u, v: u * v + 1, lambda u, v: u - v, a, b)

    a, b = np.float32([1.5, -2.0]), np.float32([3.0, 4.0])
    for p in (np.float32(1), np.float32(-1)):
        close(jit(f, compiler=compiler)(p, a, b), jax.jit(jf)(p, a, b))
    close(f(np.float32(1), a, b), jf(1.0, a, b))                      # eagerly: a known pred
    with pytest.raises(TypeError, match="with operands, on_true must be a callable"):
        nx.cond(True, 1, lambda u: u, 2.0)
