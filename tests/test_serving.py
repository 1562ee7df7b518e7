"""nxpy.serving: Batch (Nx.Batch) and Serving (Nx.Serving) — batches formed from
concurrent callers, padded to one compiled size, split back, partitioned over devices;
faults stay with their callers; streaming through hooks.

Every wait here has a timeout (a broken serving fails a test rather than hanging it), and
each Serving is stopped by its context manager (which joins its daemon threads)."""
import threading
import time

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import jit
from nxpy.serving import Batch, Serving, ServingError, ServingStopped, stream

WAIT = 60  # seconds: the most any caller waits (the machine may be loaded)

RNG = np.random.default_rng(0)
W1 = RNG.standard_normal((6, 16)).astype(np.float32) / 3
W2 = RNG.standard_normal((16, 3)).astype(np.float32) / 4


def mlp(x):
    return nx.tanh(x @ W1) @ W2


MLP = jit(mlp, compiler="exla")


def ref(x):
    return np.tanh(np.asarray(x, np.float32) @ W1) @ W2


def examples(n, seed=1):
    return np.random.default_rng(seed).standard_normal((n, 6)).astype(np.float32)


def callers(n, call):
    """Runs ``call(i)`` in ``n`` threads released together; ``[result or exception]``."""
    out = [None] * n
    gate = threading.Barrier(n)

    def one(i):
        try:
            gate.wait(WAIT)
            out[i] = call(i)
        except Exception as e:
            out[i] = e
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert not any(t.is_alive() for t in threads), "a caller is still waiting"
    return out


# ---- Batch --------------------------------------------------------------------------------
def test_batch_stack_concatenate_merge_split_pad_key():
    a = Batch.stack([nx.tensor([1.0, 2.0]), np.array([3.0, 4.0], np.float32)])
    assert (a.size, a.padding, a.batch_key) == (2, 0, None)
    assert str(a.template) == "f32[2]"
    b = Batch.concatenate([nx.tensor([[5.0, 6.0], [7.0, 8.0]])])
    m = Batch.merge([a, b])
    assert m.size == 4
    assert m.to_tree().tolist() == [[1, 2], [3, 4], [5, 6], [7, 8]]
    first, rest = Batch.split(m, 3)
    assert (first.size, rest.size) == (3, 1)
    assert rest.to_tree().tolist() == [[7, 8]]
    p = Batch.pad(first, 2)
    assert (p.size, p.padding) == (3, 2) and p.to_tree().shape == (5, 2)
    assert p.to_tree().tolist()[3:] == [[0, 0], [0, 0]]
    k = Batch.key(a, "small")
    assert k.batch_key == "small" and a.batch_key is None  # a new batch
    assert a.key("other").batch_key == "other"  # also a method
    assert Batch.new().size == 0
    # a stack of batches merges them
    assert Batch.stack([a, nx.tensor([9.0, 9.0])]).size == 3


def test_batch_containers():
    b = Batch.stack([{"x": nx.tensor([1, 2]), "y": (nx.tensor(1.0),)},
                     {"x": nx.tensor([3, 4]), "y": (nx.tensor(2.0),)}])
    tree = b.to_tree()
    assert tree["x"].tolist() == [[1, 2], [3, 4]] and tree["y"][0].tolist() == [1.0, 2.0]
    c = Batch.concatenate([(nx.iota((3, 2)), nx.iota((3,)))])
    assert c.size == 3 and "tuple" in repr(c.template) or "(" in repr(c.template)


def test_batch_errors():
    with pytest.raises(ValueError, match="Batch.stack: entry 1: expected entries of template"):
        Batch.stack([nx.tensor([1, 2]), nx.tensor([1, 2, 3])])
    with pytest.raises(ValueError, match="Batch.stack: entry 1"):
        Batch.stack([nx.tensor([1, 2]), nx.tensor([1.0, 2.0])])  # another type
    with pytest.raises(ValueError, match="same batch size"):
        Batch.concatenate([(nx.iota((2, 2)), nx.iota((3,)))])
    with pytest.raises(ValueError, match="scalar"):
        Batch.concatenate([nx.tensor(1)])
    with pytest.raises(TypeError, match="Batch.stack: expected a list of entries"):
        Batch.stack(nx.tensor([1, 2]))
    with pytest.raises(ValueError, match="Batch.pad: expected n"):
        Batch.pad(Batch.stack([nx.tensor(1)]), -1)
    with pytest.raises(TypeError, match="Batch.key: expected a hashable key"):
        Batch.key(Batch.stack([nx.tensor(1)]), ["a"])
    with pytest.raises(ValueError, match="Batch.merge: expected batches of one key"):
        Batch.merge([Batch.stack([nx.tensor(1)]).key("a"), Batch.stack([nx.tensor(1)])])
    with pytest.raises(ValueError, match="padded"):
        Batch.merge([Batch.pad(Batch.stack([nx.tensor(1)]), 1)])


def test_serving_argument_errors():
    with pytest.raises(ValueError, match="Serving: expected batch_size to be a positive"):
        Serving(mlp, batch_size=0)
    with pytest.raises(ValueError, match="batch_timeout"):
        Serving(mlp, batch_size=2, batch_timeout=-1)
    with pytest.raises(TypeError, match="Serving: expected fn to be a callable"):
        Serving(3, batch_size=2)
    with pytest.raises(ValueError, match="partitions need a function compiled"):
        Serving(mlp, batch_size=2, partitions=True)
    with pytest.raises(ValueError, match="partitions to be a count"):
        Serving(MLP, batch_size=2, partitions=99)
    s = Serving(MLP, batch_size=2)
    assert s._partitions[0].fn is MLP  # a jitted function is used as it is
    with pytest.raises(ServingStopped, match="not running"):
        s.batched_run(Batch.stack([examples(1)[0]]))
    with pytest.raises(TypeError, match="Serving.run: expected a Batch"):
        s.run(examples(2))


# ---- Serving: batching ----------------------------------------------------------------------
def test_48_callers_get_their_own_rows_in_few_batches():
    xs = examples(48)
    with Serving(MLP, batch_size=8, batch_timeout=0.05) as s:
        got = callers(48, lambda i: s.batched_run(Batch.stack([xs[i]]), timeout=WAIT))
        st = s.stats()
    for i, g in enumerate(got):
        assert not isinstance(g, Exception), g
        assert g.shape == (1, 3)
        np.testing.assert_allclose(g.to_numpy()[0], MLP(xs[i:i + 1]).to_numpy()[0],
                                   rtol=1e-6, atol=1e-6)
    assert st["requests"] == 48 and st["rows"] == 48
    assert 6 <= st["batches"] < 48, st
    assert st["largest"] <= 8 and st["queue"] == 0
    assert st["padded"] == st["batches"] * 8 - 48


def test_one_compile_serves_every_size(compiles):
    def model(x):  # a function of its own: no program of an earlier test serves it
        return mlp(x)
    s = Serving(model, batch_size=8, compiler="exla")
    xs = examples(8)
    for n in range(1, 9):
        np.testing.assert_allclose(s.run(Batch.concatenate([xs[:n]])).to_numpy(), ref(xs[:n]),
                                   rtol=1e-5, atol=1e-5)
    assert len(compiles) == 1


def test_a_request_larger_than_batch_size():
    xs = examples(21)
    with Serving(MLP, batch_size=4, batch_timeout=0.02) as s:
        big = s.batched_run(Batch.concatenate([xs]), timeout=WAIT)
        # alongside small callers too
        got = callers(5, lambda i: s.batched_run(
            Batch.concatenate([xs[: 9 + i]]) if i == 0 else Batch.stack([xs[i]]),
            timeout=WAIT))
        st = s.stats()
    np.testing.assert_allclose(big.to_numpy(), ref(xs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0].to_numpy(), ref(xs[:9]), rtol=1e-5, atol=1e-5)
    for i in range(1, 5):
        np.testing.assert_allclose(got[i].to_numpy(), ref(xs[i:i + 1]), rtol=1e-5, atol=1e-5)
    assert st["largest"] <= 4
    # inline: split into runs of batch_size
    s = Serving(MLP, batch_size=4)
    np.testing.assert_allclose(s.run(Batch.concatenate([xs])).to_numpy(), ref(xs),
                               rtol=1e-5, atol=1e-5)


def test_a_lone_request_waits_about_batch_timeout():
    x = examples(1)
    with Serving(MLP, batch_size=64, batch_timeout=0.3) as s:
        s.batched_run(Batch.concatenate([x]), timeout=WAIT)  # compiled
        t0 = time.perf_counter()
        out = s.batched_run(Batch.concatenate([x]), timeout=WAIT)
        took = time.perf_counter() - t0
    np.testing.assert_allclose(out.to_numpy(), ref(x), rtol=1e-5, atol=1e-5)
    assert 0.28 <= took < 0.3 + 5, took  # not a full batch's wait (there is none)


def test_keys_and_templates_queue_apart():
    xs = examples(4)
    seen = []

    def f(x):
        seen.append(x.shape)
        return x * 2
    with Serving(f, batch_size=4, batch_timeout=0.05) as s:
        got = callers(4, lambda i: s.batched_run(
            Batch.stack([xs[i]]).key(i % 2) if i < 2 else Batch.stack([xs[i, :3]]),
            timeout=WAIT))
    for i, g in enumerate(got):
        want = xs[i] if i < 2 else xs[i, :3]
        np.testing.assert_allclose(g.to_numpy()[0], want * 2)
    assert set(seen) == {(4, 6), (4, 3)} and len(seen) >= 3  # two keys, two templates


# ---- partitions -----------------------------------------------------------------------------
def test_partitions_spread_batches_over_devices():
    def slow(v):  # each batch holds its device a while, so the next goes elsewhere
        time.sleep(0.05)

    def model(x):
        return nx.hook(mlp(x), slow)
    xs = examples(32)
    with Serving(model, batch_size=4, batch_timeout=0.01, compiler="exla",
                 partitions=4) as s:
        assert s.devices == [0, 1, 2, 3]
        got = callers(32, lambda i: s.batched_run(Batch.stack([xs[i]]), timeout=WAIT))
        st = s.stats()
    for i, g in enumerate(got):
        np.testing.assert_allclose(g.to_numpy()[0], ref(xs[i]), rtol=1e-5, atol=1e-5)
    used = [d for d, v in st["devices"].items() if v["batches"]]
    assert len(used) >= 2, st
    assert all(v["p50_ms"] >= 40 for v in st["devices"].values() if v["batches"])


def test_partitions_over_meshes_serve_a_sharded_model():
    meshes = [nx.Mesh("m", (2,), ("x",), devices=d) for d in ([0, 1], [2, 3])]
    xs = examples(16)
    with Serving(mlp, batch_size=4, batch_timeout=0.01, compiler="exla", partitions=meshes,
                 in_shardings=(nx.P("x"),)) as s:
        assert s.devices == [(0, 1), (2, 3)]
        got = callers(16, lambda i: s.batched_run(Batch.stack([xs[i]]), timeout=WAIT))
        st = s.stats()
    for i, g in enumerate(got):
        np.testing.assert_allclose(g.to_numpy()[0], ref(xs[i]), rtol=1e-5, atol=1e-5)
    assert set(st["devices"]) == {"0,1", "2,3"} and st["batches"] >= 4
    with pytest.raises(ValueError, match="partitions to be True, False, a device count"):
        Serving(MLP, batch_size=2, partitions=["a"])


# ---- pre/postprocessing, faults ---------------------------------------------------------------
def test_preprocess_and_postprocess_run_for_each_caller():
    threads = set()

    def pre(rows):
        threads.add(threading.current_thread().name)
        return Batch.stack([np.asarray(r, np.float32) for r in rows])

    def post(out):
        return np.round(out.to_numpy(), 4).tolist()
    xs = examples(6)
    with Serving(MLP, batch_size=8, batch_timeout=0.05, preprocess=pre, postprocess=post) as s:
        got = callers(3, lambda i: s.batched_run([xs[2 * i].tolist(), xs[2 * i + 1].tolist()],
                                                 timeout=WAIT))
        assert s.run([xs[0].tolist()]) == np.round(ref(xs[:1]), 4).tolist()
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, ref(xs[2 * i: 2 * i + 2]), atol=2e-4)
    assert not any(t.startswith("nxpy-serving") for t in threads)


def test_an_error_stays_with_its_batch_and_the_serving_goes_on():
    def f(x):
        a = x.to_numpy()
        if (a < 0).any():
            raise ValueError("negative input")
        return nx.from_numpy(a + 1)
    with Serving(f, batch_size=4, batch_timeout=0.01) as s:
        with pytest.raises(ValueError, match="negative input"):
            s.batched_run(Batch.stack([np.float32(-1)]), timeout=WAIT)
        assert s.batched_run(Batch.stack([np.float32(1)]), timeout=WAIT).tolist() == [2.0]
    # a request whose template the model cannot take: its caller's error, others go on
    with Serving(MLP, batch_size=4, batch_timeout=0.05) as s:
        xs = examples(3)
        got = callers(3, lambda i: s.batched_run(
            Batch.stack([xs[i, :5] if i == 0 else xs[i]]), timeout=WAIT))
        assert isinstance(got[0], Exception) and not isinstance(got[0], TimeoutError)
        for i in (1, 2):
            np.testing.assert_allclose(got[i].to_numpy()[0], ref(xs[i]), rtol=1e-5, atol=1e-5)
        assert s.batched_run(Batch.stack([xs[0]]), timeout=WAIT).shape == (1, 3)
    # a function whose result has no batch axis
    with Serving(lambda x: x.sum(), batch_size=2, compiler="exla") as s:
        with pytest.raises(ServingError, match="leading batch axis of 2 rows"):
            s.batched_run(Batch.stack([np.float32(1)]), timeout=WAIT)


def test_a_dying_batching_thread_fails_its_callers_not_hangs_them():
    def f(x):
        raise SystemExit("the model exits")  # not an Exception: the thread ends
    s = Serving(f, batch_size=2, batch_timeout=0.0)
    with s:
        with pytest.raises(ServingError, match="SystemExit"):
            s.batched_run(Batch.stack([np.float32(1)]), timeout=WAIT)
        s._partitions[0].thread.join(WAIT)
        with pytest.raises(ServingStopped, match="not running"):
            s.batched_run(Batch.stack([np.float32(1)]), timeout=WAIT)


def _slow_serving(delay, **kw):
    gate = threading.Event()

    def f(x):
        gate.set()
        time.sleep(delay)
        return nx.from_numpy(x.to_numpy() * 2)
    return Serving(f, batch_size=2, batch_timeout=0.0, **kw), gate


@pytest.mark.parametrize("drain", [False, True])
def test_stop_with_requests_in_flight(drain):
    s, running = _slow_serving(0.3)
    s.start()
    out = {}

    def call(i):
        try:
            out[i] = s.batched_run(Batch.stack([np.float32(i), np.float32(i)]), timeout=WAIT)
        except Exception as e:
            out[i] = e
    first = threading.Thread(target=call, args=(0,), daemon=True)
    first.start()
    assert running.wait(WAIT)  # batch 0 is running
    rest = [threading.Thread(target=call, args=(i,), daemon=True) for i in (1, 2)]
    for t in rest:
        t.start()
    deadline = time.monotonic() + WAIT
    while s.stats()["queue"] < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    s.stop(drain=drain, timeout=WAIT)
    for t in [first, *rest]:
        t.join(WAIT)
    assert out[0].tolist() == [0.0, 0.0]  # the running batch finishes
    for i in (1, 2):
        if drain:
            assert out[i].tolist() == [2.0 * i] * 2
        else:
            assert isinstance(out[i], ServingStopped), out[i]
            assert "stopped before this request ran" in str(out[i])
    assert not any(p.thread.is_alive() for p in s._partitions)
    with pytest.raises(ServingStopped):
        s.batched_run(Batch.stack([np.float32(1)]))


def test_a_callers_timeout_cancels_its_rows():
    s, running = _slow_serving(0.4)
    with s:
        t = threading.Thread(target=lambda: s.batched_run(Batch.stack([np.float32(0)] * 2),
                                                           timeout=WAIT), daemon=True)
        t.start()
        assert running.wait(WAIT)
        with pytest.raises(TimeoutError, match="no result within 0.05 s"):
            s.batched_run(Batch.stack([np.float32(1)] * 3), timeout=0.05)
        assert s.stats()["queue"] == 0  # its rows left the queue
        t.join(WAIT)
        assert s.batched_run(Batch.stack([np.float32(3)]), timeout=WAIT).tolist() == [6.0]


def test_a_cancelled_submit_future_drops_its_rows_and_the_serving_goes_on():
    # an event loop cancelling its task cancels the future of submit(): queued rows leave
    # the queue; rows already running finish unseen (their future stays cancelled)
    s, running = _slow_serving(0.3)
    with s:
        fut = s.submit(Batch.stack([np.float32(1)] * 2))
        assert running.wait(WAIT)  # its batch runs
        queued = s.submit(Batch.stack([np.float32(2)] * 3))
        assert fut.cancel() and queued.cancel()
        assert s.stats()["queue"] == 0  # its rows left the queue
        assert s.batched_run(Batch.stack([np.float32(3)]), timeout=WAIT).tolist() == [6.0]
        assert fut.cancelled() and queued.cancelled()
        assert all(p.thread.is_alive() for p in s._partitions)


def test_the_callers_of_a_batch_wake_one_another_though_one_stopped_waiting():
    # the batching thread wakes a batch's first waiting caller and each the next: a
    # caller that stopped waiting after its rows ran (it timed out) still passes it on
    import collections

    from nxpy.defn import tree as tree_mod
    from nxpy.serving import core
    reqs = [core._Request(Batch.stack([np.float32(i)])) for i in range(5)]
    wakes = collections.deque()
    for i, r in enumerate(reqs):
        r.deliver(0, [np.array([i * 10], np.float32)], 1, tree_mod.LEAF, wakes)
    assert len(wakes) == 5  # delivered, all asleep
    for stopped in (0, 2):  # its caller gave up (as batched_run does on a timeout)
        reqs[stopped].pass_on()
    core._wake_next(wakes)  # the batching thread's one wake
    got = callers(3, lambda i: reqs[(1, 3, 4)[i]].result(WAIT).tolist())
    assert got == [[10.0], [30.0], [40.0]] and not wakes


def test_a_caller_timing_out_in_a_batch_leaves_the_others_answered():
    def f(x):
        time.sleep(0.3)
        return nx.from_numpy(x.to_numpy() * 2)
    with Serving(f, batch_size=4, batch_timeout=0.2) as s:
        got = callers(4, lambda i: s.batched_run(Batch.stack([np.float32(i)]),
                                                 timeout=0.1 if i == 1 else WAIT))
    assert isinstance(got[1], TimeoutError), got[1]
    assert [got[i].tolist() for i in (0, 2, 3)] == [[0.0], [4.0], [6.0]]


# ---- streaming -----------------------------------------------------------------------------
def test_stream_hands_each_caller_its_rows():
    def model(x):
        h = stream(nx.tanh(x @ W1), "hidden")
        return h @ W2
    xs = examples(6)
    with Serving(model, batch_size=4, batch_timeout=0.05, compiler="exla") as s:
        got = callers(3, lambda i: list(s.batched_run(Batch.stack([xs[2 * i], xs[2 * i + 1]]),
                                                      stream=True, timeout=WAIT)))
    for i, events in enumerate(got):
        assert not isinstance(events, Exception), events
        rows = xs[2 * i: 2 * i + 2]
        names = [n for n, _ in events]
        assert names[-1] == "batch" and set(names[:-1]) == {"hidden"}, names
        hidden = np.concatenate([v.to_numpy() for n, v in events if n == "hidden"])
        np.testing.assert_allclose(hidden, np.tanh(rows @ W1), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(events[-1][1].to_numpy(), ref(rows), rtol=1e-5, atol=1e-5)
    # outside a serving the stream is x, and nothing is sent anywhere
    alone = jit(model, compiler="exla")(xs[:2])
    np.testing.assert_allclose(alone.to_numpy(), ref(xs[:2]), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="stream: expected name"):
        stream(nx.tensor(1.0), "batch")


# ---- the benchmark sets up and runs (untimed, small: as tests/test_bench.py does) --------------
def test_the_serving_benchmark_runs():
    from bench import serving as bench_serving
    rows = bench_serving.run(clients=4, requests=2, batch_sizes=(1, 4))
    assert [r["what"] for r in rows][1:] == ["Serving, batch_size=1", "Serving, batch_size=4"]
    assert all(r["rps"] > 0 for r in rows)
    assert "requests/s" in bench_serving.table(rows, 4, 2)
