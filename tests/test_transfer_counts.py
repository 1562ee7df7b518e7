"""Telemetry counts every copy between the host and a device (``transfer_to_device``,
``transfer_to_host``), on every path, with JAX's transfer guard as the independent
witness: under ``jax_transfer_guard="log_explicit"`` jaxlib logs one line to stderr per
host-to-device copy (its C++ dispatch's copies too) and per device-to-host copy, and the
tests count those lines (``capfd``: the file descriptor, where jaxlib's C++ writes).

On the CPU, JAX reads a buffer as a view of it, not a copy, and its guard logs nothing
for a read; nxpy counts each read all the same (as the copy it is on an accelerator).
There the reads are checked against the count the test expects; where the guard sees
reads, against the guard."""
import gc

import numpy as np
import pytest

import nxpy as nx
from helpers import meshes_2x2
from nxpy import P, telemetry
from nxpy.defn import jit, shard_jit
from nxpy.serving import Batch, Serving

import jax  # after nxpy (nxpy's conftest starts the shared client)

TO_DEVICE, TO_HOST = "transfer_to_device", "transfer_to_host"
#: jaxlib's log line of each kind of copy (guard_lib: LOG(WARNING) << "...: " << what)
LINES = {TO_DEVICE: "host-to-device transfer:", TO_HOST: "device-to-host transfer:"}
GUARDS = ("jax_transfer_guard_host_to_device", "jax_transfer_guard_device_to_host")


class Witness:
    """``with Witness(capfd) as w:`` counts, inside the block, nxpy's transfer counters
    and the copies JAX's guard logged (set process-wide, so that batching threads are
    seen too); ``w.counted[kind]``, ``w.seen[kind]``."""

    def __init__(self, capfd):
        self.capfd = capfd

    def __enter__(self):
        self.capfd.readouterr()  # what came before is not ours
        self.old = [getattr(jax.config, g) for g in GUARDS]
        for g in GUARDS:  # "explicit" too: jax's own device_put counts, as nxpy's
            jax.config.update(g, "log_explicit")
        self.before = telemetry.counters()
        return self

    def __exit__(self, *exc):
        after = telemetry.counters()
        for g, v in zip(GUARDS, self.old):
            jax.config.update(g, v)
        lines = self.capfd.readouterr().err.splitlines()
        self.counted = {k: after.get(k, 0) - self.before.get(k, 0) for k in LINES}
        self.seen = {k: sum(s in line for line in lines) for k, s in LINES.items()}


_SEES = {}


def guard_sees(capfd) -> dict:
    """Whether the guard logs each kind of copy here (checked once on JAX's own arrays):
    host-to-device everywhere (the tests are skipped where jaxlib's log lines do not
    reach stderr), device-to-host where a read is a copy (not on the CPU)."""
    if not _SEES:
        with Witness(capfd) as w:
            np.asarray(jax.device_put(np.ones(3, np.float32)) * 2)
        _SEES.update({k: n > 0 for k, n in w.seen.items()})
    if not _SEES[TO_DEVICE]:
        pytest.skip("jaxlib's transfer-guard log lines do not reach stderr here "
                    "(TF_CPP_MIN_LOG_LEVEL?): no witness")
    return _SEES


def agree(capfd, w, to_device, to_host, arrays_read=None, assembled=0):
    """nxpy counted ``to_device``/``to_host`` copies (what the test expects of its own
    calls), and the guard saw the same. Reads: where the guard sees them, its lines are
    one per block read (jaxlib 0.10) or one per array read (``arrays_read``, newer
    jaxlibs copy a sharded array in one batch); on the CPU it sees none of a one-block
    read, and jaxlib 0.12 one line per array it assembles from several blocks
    (``assembled``: a real copy there)."""
    sees = guard_sees(capfd)
    assert w.counted[TO_DEVICE] == w.seen[TO_DEVICE] == to_device, (w.counted, w.seen)
    assert w.counted[TO_HOST] == to_host, (w.counted, w.seen)
    if sees[TO_HOST]:
        assert w.seen[TO_HOST] in {to_host, arrays_read or to_host}, (w.counted, w.seen)
    else:
        assert w.seen[TO_HOST] in {0, assembled}, (w.counted, w.seen)


def host(a):
    return nx.tensor(a, backend="numpy")


A = np.arange(12, dtype=np.float32).reshape(3, 4)


# ----------------------------------------------------------------------------------------
# The single-device jit
# ----------------------------------------------------------------------------------------
def test_jit_counts_host_tensors_on_every_call(capfd):
    """JAX's C++ dispatch copies a host argument in on every call, the first (which
    compiles) and the later ones alike."""
    f = jit(lambda x, y: x * 2 + y, compiler="exla")
    x, y = host(A), host(A + 1)
    with Witness(capfd) as w:
        for _ in range(10):
            r = f(x, y)
    agree(capfd, w, 20, 0)
    np.testing.assert_array_equal(r.to_numpy(), A * 3 + 1)


def test_jit_counts_numpy_arrays_on_every_call(capfd):
    """NumPy arrays take the array fast path (``run.call_arrays``) after the first call."""
    f = jit(lambda x, y: x - y, compiler="exla")
    with Witness(capfd) as w:
        for i in range(10):
            r = f(A, A * i)
    agree(capfd, w, 20, 0)
    np.testing.assert_array_equal(np.asarray(r), A * -8)


def test_jit_mixed_arguments_count_only_the_host_ones(capfd):
    f = jit(lambda x, y, z: x + y * z, compiler="exla")
    d = nx.tensor(A, backend="exla")
    with Witness(capfd) as w:
        for _ in range(5):
            f(d, host(A), A)  # a device tensor, a host tensor, a NumPy array
    agree(capfd, w, 10, 0)


def test_jit_on_device_tensors_copies_nothing_and_reads_count(capfd):
    f = jit(lambda x: x + 1, compiler="exla")
    x = nx.tensor(A, backend="exla")
    f(x)
    with Witness(capfd) as w:
        for _ in range(10):
            x = f(x)
    agree(capfd, w, 0, 0)
    with Witness(capfd) as w:
        got = [f(x).to_numpy() for _ in range(3)]  # three results, each read once
    agree(capfd, w, 0, 3)
    np.testing.assert_array_equal(got[0], A + 11)


def test_jit_results_of_several_outputs_read_one_each(capfd):
    f = jit(lambda x: (x + 1, x * 2, {"s": nx.sum(x)}), compiler="exla")
    with Witness(capfd) as w:
        a, b, c = f(A)
        vals = [a.to_numpy(), b.to_numpy(), c["s"].to_numpy()]
    agree(capfd, w, 1, 3)
    assert float(vals[2]) == float(A.sum())


# ----------------------------------------------------------------------------------------
# Eager EXLA
# ----------------------------------------------------------------------------------------
def test_eager_exla_tensors_count_their_copies(capfd):
    with Witness(capfd) as w:
        a = nx.tensor(A, backend="exla")
        b = nx.backend_transfer(host(A), "exla")
        c = a * b  # device operands only: nothing copied
        d = c + 1  # the scalar becomes a tensor on the device: one copy
        out = d.to_numpy()
    agree(capfd, w, 3, 1)
    np.testing.assert_array_equal(out, A * A + 1)


def test_eager_exla_default_backend_and_host_operands(capfd):
    old = nx.default_backend("exla")
    try:
        with Witness(capfd) as w:
            a = nx.tensor(A)  # on the default backend: a copy to the device
            for _ in range(4):
                a = nx.add(a, host(A))  # a host operand: copied in by each op's program
            s = nx.sum(a).to_numpy()
    finally:
        nx.default_backend(old)
    agree(capfd, w, 5, 1)
    assert float(s) == float(A.sum()) * 5


# ----------------------------------------------------------------------------------------
# Sharded tensors: device_put over a mesh, jit on them, shard_jit
# ----------------------------------------------------------------------------------------
def test_device_put_and_reading_sharded_tensors(capfd):
    m, _ = meshes_2x2()
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    with Witness(capfd) as w:
        x = nx.device_put(a, nx.NamedSharding(m, P("x", "y")))  # four blocks
        r = nx.device_put(a, nx.NamedSharding(m, P()))  # a copy on each of four devices
        half = nx.device_put(a, nx.NamedSharding(m, P("x")))  # two blocks, four copies
    agree(capfd, w, 12, 0)
    with Witness(capfd) as w:
        got = [x.to_numpy(), r.to_numpy(), half.to_numpy()]  # blocks read: 4, 1, 2
    agree(capfd, w, 0, 7, arrays_read=3, assembled=2)
    for g in got:
        np.testing.assert_array_equal(g, a)


def test_sharded_jit_counts_host_arguments_per_device(capfd):
    m, _ = meshes_2x2()
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    x = nx.device_put(a, nx.NamedSharding(m, P("x", "y")))
    f = jit(lambda x, b: x * 2 + b, compiler="exla")
    with Witness(capfd) as w:
        for _ in range(3):
            y = f(x, host(a))  # the host tensor: replicated, one copy per device
    agree(capfd, w, 12, 0)
    with Witness(capfd) as w:
        for _ in range(3):
            y = f(y, x)  # sharded tensors only: nothing moves
    agree(capfd, w, 0, 0)
    with Witness(capfd) as w:
        out = y.to_numpy()
    agree(capfd, w, 0, 4, arrays_read=1, assembled=1)
    np.testing.assert_array_equal(out, (a * 3) * 8 + 7 * a)


def test_jit_with_in_shardings_places_numpy_arrays(capfd):
    m, _ = meshes_2x2()
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    f = jit(lambda x: x + 1, compiler="exla", in_shardings=nx.NamedSharding(m, P("x")),
            out_shardings=nx.NamedSharding(m, P()))
    with Witness(capfd) as w:
        for _ in range(3):
            y = f(a)  # two blocks, each on the two devices of its row: four copies
        out = y.to_numpy()  # replicated: one read
    agree(capfd, w, 12, 1)
    np.testing.assert_array_equal(out, a + 1)


def test_shard_jit_per_device_host_tensors(capfd):
    m, _ = meshes_2x2()
    f = shard_jit(lambda x: x * 3, m, input_shardings=[{0: [0], 1: [1]}], compiler="exla")
    blocks = [host(np.full((2, 2), p, np.float32)) for p in range(4)]
    with Witness(capfd) as w:
        for _ in range(3):
            outs = f([[b] for b in blocks])
        got = [o.to_numpy() for o in outs]  # each device's block, read once
    agree(capfd, w, 12, 4)
    np.testing.assert_array_equal(got[3], np.full((2, 2), 9, np.float32))


# ----------------------------------------------------------------------------------------
# Serving
# ----------------------------------------------------------------------------------------
def test_serving_counts_every_batch(capfd):
    """Ten batches: each one padded array in, one result read; in the caller's thread
    (``run``) and on the batching thread (``batched_run``) alike."""
    s = Serving(lambda x: x * 2, batch_size=4, batch_timeout=0.001, compiler="exla")
    rows = np.arange(8, dtype=np.float32).reshape(2, 4)
    with Witness(capfd) as w:
        for _ in range(10):
            out = s.run(Batch.concatenate([rows]))
    agree(capfd, w, 10, 10)
    np.testing.assert_array_equal(out.to_numpy(), rows * 2)  # out: a host tensor
    with s, Witness(capfd) as w:
        for _ in range(10):
            out = s.batched_run(Batch.concatenate([rows]))
    agree(capfd, w, 10, 10)
    np.testing.assert_array_equal(out.to_numpy(), rows * 2)


# ----------------------------------------------------------------------------------------
# The lazily summed counters
# ----------------------------------------------------------------------------------------
def test_a_tally_keeps_its_total_after_its_owner_is_gone():
    box = []

    def owner():
        box[0]()
    box.append(telemetry.tally("test_tally", 3, owner))
    b = telemetry.counters().get("test_tally", 0)
    owner()
    owner()
    assert telemetry.counters()["test_tally"] - b == 6
    owner()
    assert telemetry.counters()["test_tally"] - b == 9  # read again: still live, summed
    del owner
    box.clear()
    gc.collect()
    assert telemetry.counters()["test_tally"] - b == 9  # folded into the counts
    assert "test_tally" not in [name for name, _, _ in telemetry._tallies.values()]
    assert telemetry.counters()["test_tally"] - b == 9  # and only once
