"""shard_jit's per-call fast path (a compiled program, flat per-device tensor lists) and
EXLA's reuse of assembled global arrays: same results and same errors as the full path."""
import gc

import numpy as np
import pytest

import nxpy as nx
from nxpy.backend import get_backend
from nxpy.backends.exla import pjrt
from nxpy.defn import jit, shard_jit, sharding as SH

SPEC = {0: [0], 1: [1]}


def _mesh():
    return nx.Mesh("mesh", (2, 2))


def _on_devices(arr, mesh, type="f32"):
    """Per-device EXLA tensors, each on its own device."""
    b = get_backend("exla")
    parts = SH.shard_array(np.asarray(arr), SH.normalize(SPEC, np.shape(arr), mesh), mesh)
    return [b.from_numpy(np.ascontiguousarray(p), nx.types.parse(type), None, device_id=d)
            for p, d in zip(parts, mesh.devices)]


def _fresh_error(mesh, args):
    f = shard_jit(lambda x, y: x * 2 + y, mesh, input_shardings=[SPEC, SPEC], compiler="exla")
    with pytest.raises(Exception) as e:
        f(args)
    return type(e.value), str(e.value)


def test_warm_program_gives_the_same_results_and_errors_as_a_cold_one():
    mesh = _mesh()
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    xs, ys = _on_devices(a, mesh), _on_devices(a + 100, mesh)
    good = [[x, y] for x, y in zip(xs, ys)]
    f = shard_jit(lambda x, y: x * 2 + y, mesh, input_shardings=[SPEC, SPEC], compiler="exla")
    first = [o.to_numpy() for o in f(good)]
    assert f._fast_prepare(good) is not None  # compiled: the fast path applies
    for _ in range(3):
        again = f(good)
        assert [o.device_id for o in again] == list(mesh.devices)
        for o, w in zip(again, first):
            np.testing.assert_array_equal(o.to_numpy(), w)
    # tuples and a tuple of tuples are accepted alike
    np.testing.assert_array_equal(f(tuple(tuple(g) for g in good))[3].to_numpy(), first[3])

    s8 = _on_devices(a.astype(np.int8), mesh, "s8")
    big = _on_devices(np.zeros((8, 4), np.float32), mesh)
    bad = [
        good[:3],                                           # too few devices
        [good[0], good[1], good[2], xs[3]],                 # not a list
        [good[0], good[1], [xs[2]], good[3]],               # fewer arguments on one device
        [good[0], good[1], good[2], [xs[3], big[3]]],       # a shard of another shape
        [good[0], [xs[1], s8[1]], good[2], good[3]],        # a shard of another type
        [good[0], good[1], good[2], [xs[3], None]],         # not a tensor
    ]
    for args in bad:
        want = _fresh_error(mesh, args)
        with pytest.raises(want[0]) as e:
            f(args)
        assert str(e.value) == want[1]
    # the fast path did not cache anything wrong: good calls still work
    np.testing.assert_array_equal(f(good)[0].to_numpy(), first[0])


def test_numbers_and_arrays_still_go_through_the_full_path():
    mesh = _mesh()
    f = shard_jit(lambda x: x + 1, mesh, input_shardings=[{}], compiler="exla")
    r = f([[np.float32(1.5)] for _ in range(4)])
    assert [o.tolist() for o in r] == [2.5] * 4
    r = f([[nx.tensor(1.5)] for _ in range(4)])  # numpy-backend tensors: moved to devices
    assert [o.device_id for o in r] == list(mesh.devices) and r[1].tolist() == 2.5


def test_warm_program_called_inside_a_defn_is_still_rejected():
    mesh = _mesh()
    xs = _on_devices(np.ones((4, 4), np.float32), mesh)
    f = shard_jit(lambda x: x * 2, mesh, input_shardings=[SPEC], compiler="exla")
    f([[x] for x in xs])
    with pytest.raises(RuntimeError, match="host-only"):
        jit(lambda t: f([[x] for x in xs])[0] + t)(nx.tensor(1.0))


def test_assembler_reuses_the_global_array_only_while_its_shards_live():
    mesh = _mesh()
    bufs = [pjrt.to_device(np.full((2, 2), p, np.float32), d) for p, d in enumerate(mesh.devices)]
    asm = pjrt.assembler((4, 4), np.float32, mesh.devices, mesh.shape, mesh.axis_names,
                         ("axis_0", "axis_1"))
    g = asm(bufs)
    assert asm(list(bufs)) is g
    other = [pjrt.to_device(np.zeros((2, 2), np.float32), d) for d in mesh.devices]
    g2 = asm(other)
    assert g2 is not g and asm(bufs) is not g2
    g3 = asm(bufs)
    assert np.asarray(g3)[2:, :2].tolist() == [[2, 2], [2, 2]]
    last = next(c.cell_contents for c in asm.__closure__ if isinstance(c.cell_contents, list))
    assert last[0] is not None
    del g, g2, g3
    bufs.pop()  # one shard dies: the kept global array (and its device memory) goes too
    gc.collect()
    assert last[0] is None
    # plain assemble keeps nothing
    assert pjrt.assemble((4, 4), np.float32, other, mesh.devices, mesh.shape,
                         mesh.axis_names, ("axis_0", "axis_1")).shape == (4, 4)
