"""shard_jit's per-call fast path (a compiled program, flat per-device tensor lists),
EXLA's reuse of assembled global arrays (same results and same errors as the full path),
and per-device results that stay pieces of one global array until used on their own."""
import gc

import numpy as np
import pytest

import nxpy as nx
from nxpy.backend import get_backend
from nxpy import pjrt
from nxpy.compilers.exla.buffers import Piece
from nxpy.defn import jit, shard_jit
from nxpy.defn.sharding import specs as SH
from nxpy.layout import read_sharding
from nxpy.tensor import Deferred, Tensor

SPEC = {0: [0], 1: [1]}


def _mesh():
    # concrete: an abstract mesh would run where the (deliberately misplaced) pieces live
    return nx.Mesh("mesh", (2, 2), devices=[0, 1, 2, 3])


def _on_devices(arr, mesh, type="f32"):
    """Per-device EXLA tensors, each on its own device."""
    b = get_backend("exla")
    parts = read_sharding(SPEC, np.shape(arr), mesh).shard_array(np.asarray(arr))
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
    with pytest.raises(nx.HostOnlyError, match="host-only"):
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


# ----------------------------------------------------------------------------------------
# Per-device results are pieces of one global array until used on their own
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("devices", [None, [3, 1, 2, 0], [4, 5, 6, 7]])
def test_results_flow_into_the_next_program_as_the_global_array(devices):
    mesh = nx.Mesh("mesh", (2, 2), devices=devices)
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    xs, ys = _on_devices(a, mesh), _on_devices(a * 10, mesh)
    f = shard_jit(lambda x, y: x * 2 + y, mesh, input_shardings=[SPEC, SPEC], compiler="exla")
    g = shard_jit(lambda x: x - 1, mesh, input_shardings=[SPEC], compiler="exla")
    r = f([[x, y] for x, y in zip(xs, ys)])
    r2 = g([[t] for t in r])
    for p, t in enumerate(r2):
        assert t.device_id == mesh.devices[p] == pjrt.device_index_of(t.data)
    np.testing.assert_array_equal(SH.assemble(r2, mesh, SPEC).to_numpy(), a * 12 - 1)
    np.testing.assert_array_equal(SH.assemble(r, mesh, SPEC).to_numpy(), a * 12)
    for p, t in enumerate(r):  # each piece, read on its own, is its partition's shard
        assert pjrt.device_index_of(t.data) == mesh.devices[p]
        np.testing.assert_array_equal(
            t.to_numpy(), read_sharding(SPEC, a.shape, mesh).shard_array(a * 12)[p])


def test_pieces_out_of_place_are_not_taken_for_the_global_array():
    mesh = _mesh()
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    def shards(v):
        return read_sharding(SPEC, v.shape, mesh).shard_array(v)
    f = shard_jit(lambda x: x * 2, mesh, input_shardings=[SPEC], compiler="exla")
    g = shard_jit(lambda x: x + 1, mesh, input_shardings=[SPEC], compiler="exla")
    def fresh():
        return f([[x] for x in _on_devices(a, mesh)])
    want = shards(a * 2)
    # partitions 0 and 1 swapped: each device gets the other's piece (moved over)
    r = fresh()
    out = g([[r[1]], [r[0]], [r[2]], [r[3]]])
    for p, q in enumerate([1, 0, 2, 3]):
        np.testing.assert_array_equal(out[p].to_numpy(), want[q] + 1)
        assert pjrt.device_index_of(out[p].data) == p
    # one piece already read on its own: the others are still used correctly
    r = fresh()
    r[2].to_numpy()
    assert type(r[2].raw_data) is not Piece
    np.testing.assert_array_equal(SH.assemble(g([[t] for t in r]), mesh, SPEC).to_numpy(),
                                  a * 2 + 1)
    # pieces of two different results
    r, s = fresh(), fresh()
    out = g([[r[0]], [s[1]], [r[2]], [s[3]]])
    np.testing.assert_array_equal(SH.assemble(out, mesh, SPEC).to_numpy(), a * 2 + 1)
    # the same pieces where another sharding is expected are per-device shards of it
    h = shard_jit(lambda x: x + 0, mesh, input_shardings=[{0: [0, 1]}], compiler="exla")
    r = fresh()
    out = h([[t] for t in r])
    np.testing.assert_array_equal(SH.assemble(out, mesh, h.output_shardings).to_numpy(),
                                  np.concatenate(want))
    # a piece as an argument of a single-device program and of an eager op
    r = fresh()
    np.testing.assert_array_equal(jit(lambda x: x * 3, compiler="exla")(r[3]).to_numpy(),
                                  want[3] * 3)
    np.testing.assert_array_equal((r[1] + 1).to_numpy(), want[1] + 1)


def test_block_until_ready_waits_without_splitting():
    mesh = _mesh()
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    f = shard_jit(lambda x: (x * 2, {"s": nx.sum(x)}), mesh, input_shardings=[SPEC],
                  compiler="exla")
    r = f([[x] for x in _on_devices(a, mesh)])
    tree = [r, nx.tensor([1, 2])]
    assert nx.block_until_ready(tree) is tree
    assert [t[1]["s"].item() for t in r] == [a.sum()] * 4
    one = jit(lambda x: x + 1, compiler="exla")(nx.tensor([1.0], backend="exla"))
    assert nx.block_until_ready(one) is one and one.tolist() == [2.0]


def test_per_device_results_stay_pieces_until_used():
    mesh = _mesh()
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    f = shard_jit(lambda x: x * 2, mesh, input_shardings=[SPEC], compiler="exla")
    g = shard_jit(lambda x: x + 1, mesh, input_shardings=[SPEC], compiler="exla")
    r = f([[x] for x in _on_devices(a, mesh)])
    assert all(type(t.raw_data) is Piece for t in r)
    g([[t] for t in r])
    nx.block_until_ready(r)
    assert all(type(t.raw_data) is Piece for t in r), "the results were split, not reused"
    r[0].to_numpy()
    assert type(r[0].raw_data) is not Piece and type(r[1].raw_data) is Piece


def test_deferred_data_resolves_once():
    calls = []

    class Later(Deferred):
        def resolve(self):
            calls.append(1)
            return np.array([1, 2], np.int32)

    t = Tensor(Later(), (2,), nx.types.parse("s32"), backend=get_backend("numpy"))
    assert isinstance(t.raw_data, Later)
    assert t.tolist() == [1, 2] and (t + 1).tolist() == [2, 3]
    assert calls == [1] and isinstance(t.raw_data, np.ndarray)
