"""Compile once, ever: the process-wide trace/lowering/executable caches, the abstract-mesh
key, compile-once under threads, the persistent executable cache across processes, and the
telemetry that shows it all (every test counts events; none measures time)."""
import glob
import hashlib
import logging
import os
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

import nxpy as nx
from nxpy import pjrt, telemetry
from nxpy.cache import LockedCache
from nxpy.defn import default_options, jit, shard_jit

from helpers import COMPILERS, FULL_PRODUCT


@pytest.fixture
def fresh(monkeypatch):
    """Counts the events of the test; executables compiled by earlier tests are set aside
    (the same module text would otherwise be found in the process-wide cache)."""
    monkeypatch.setattr(pjrt.compiler, "_EXECUTABLES", LockedCache())
    monkeypatch.setitem(pjrt._state, "cache_dir", None)  # restored afterwards
    before = telemetry.counters()

    def delta():
        now = telemetry.counters()
        return {k: now.get(k, 0) - before.get(k, 0) for k in
                ("trace", "lower", "compile", "disk_hit", "disk_miss")}
    return delta


def test_a_hundred_calls_compile_once(fresh):
    def f(x):
        return x * 2 + 1
    g = jit(f, compiler="exla")
    for i in range(100):
        assert g(nx.tensor([i, 1])).tolist() == [2 * i + 1, 3]
    assert fresh() == {"trace": 1, "lower": 1, "compile": 1, "disk_hit": 0, "disk_miss": 0}


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_new_wrapper_of_the_same_function_reuses_the_program(fresh, compiler):
    def f(x, y):
        return nx.dot(x, y) - 1
    x = nx.tensor(np.eye(3, dtype=np.float32))
    a = jit(f, compiler=compiler)(x, x)
    b = jit(f, compiler=compiler)(x, x)  # another wrapper: no trace, no lowering, no compile
    c = nx.defn.defn(f, compiler=compiler)(x, x)
    assert a.tolist() == b.tolist() == c.tolist()
    assert fresh()["trace"] == 1
    assert fresh()["compile"] == (1 if compiler == "exla" else 0)
    # a different shape, a different option or compiler: a new program
    jit(f, compiler=compiler)(nx.tensor(np.eye(2, dtype=np.float32)), nx.eye(2, type="f32"))
    assert fresh()["trace"] == 2


def test_static_options_and_donation_are_part_of_the_key(fresh):
    def f(x, *, k=1):
        return x + k
    x = nx.tensor([1, 2])
    assert jit(f, compiler="exla")(x, k=1).tolist() == [2, 3]
    assert jit(f, compiler="exla")(x, k=2).tolist() == [3, 4]
    assert fresh()["trace"] == 2
    jit(f, compiler="exla", donate_argnums=0)(nx.tensor([1, 2]), k=1)
    assert fresh()["trace"] == 3


@pytest.mark.parametrize("compiler", COMPILERS)
def test_same_shaped_mesh_on_other_devices_reuses_trace_and_lowering(fresh, compiler):
    if pjrt.device_count() < 8:
        pytest.skip("needs 8 devices")

    def body(x):
        return nx.sum(x, axes=[0]) * 2
    specs = dict(input_shardings=[{0: ["a"]}], compiler=compiler)
    m1 = nx.Mesh("m", (2, 2), axis_names=("a", "b"), devices=[0, 1, 2, 3])
    m2 = nx.Mesh("m", (2, 2), axis_names=("a", "b"), devices=[4, 5, 6, 7])
    args = [[nx.tensor(np.full((2, 3), p // 2, np.float32))] for p in range(4)]
    r1 = shard_jit(body, m1, **specs)(args)
    assert fresh()["trace"] == 1
    r2 = shard_jit(body, m2, **specs)(args)
    d = fresh()
    assert d["trace"] == 1  # nothing traced again
    assert d["lower"] == (1 if compiler == "exla" else 0)  # nor lowered
    assert d["compile"] == (2 if compiler == "exla" else 0)  # compiled for the new devices
    assert [t.tolist() for t in r1] == [t.tolist() for t in r2]
    assert [t.device_id for t in r2] == [4, 5, 6, 7]
    # a second wrapper on the first mesh: nothing at all
    shard_jit(body, m1, **specs)(args)
    assert fresh() == d
    # another mesh shape or axis names: a new program
    m3 = nx.Mesh("m", (4,), axis_names=("a",), devices=[0, 1, 2, 3])
    shard_jit(body, m3, **specs)([[nx.tensor(np.ones((1, 3), np.float32))]] * 4)
    assert fresh()["trace"] == 2


@pytest.mark.parametrize("sharded", [False, True])
def test_sixteen_threads_first_call_compile_once(fresh, sharded):
    def f(x):
        return nx.exp(x) * 3 - x
    if sharded:
        mesh = nx.Mesh("m", (2,), axis_names=("a",))
        g = shard_jit(f, mesh, input_shardings=[{0: ["a"]}], compiler="exla")
        args = [[nx.tensor([0.5, 1.5])], [nx.tensor([2.5, 3.5])]]
        expect = [np.exp(np.array(a[0].tolist(), np.float32)) * 3 - np.array(a[0].tolist(),
                                                                              np.float32)
                  for a in args]
    else:
        g = jit(f, compiler="exla")
        x = nx.tensor([0.5, 1.5])
        expect = np.exp(np.float32([0.5, 1.5])) * 3 - np.float32([0.5, 1.5])
    barrier = threading.Barrier(16)
    results, errors = [None] * 16, []

    def worker(i):
        try:
            barrier.wait()
            out = g(args) if sharded else g(x)
            results[i] = [o.to_numpy() for o in out] if sharded else out.to_numpy()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for r in results:
        np.testing.assert_allclose(r, expect, rtol=1e-6)
    d = fresh()
    assert (d["trace"], d["lower"], d["compile"]) == (1, 1, 1)


def test_a_failed_compile_is_not_cached_and_every_waiter_gets_the_error():
    cache, calls = LockedCache(), []

    def boom():
        calls.append(1)
        raise ValueError("no")
    for _ in range(2):
        with pytest.raises(ValueError):
            cache.get("k", boom)
    assert len(calls) == 2 and len(cache) == 0


# ----------------------------------------------------------------------------------------
# Telemetry
# ----------------------------------------------------------------------------------------
def test_attached_handlers_see_every_event(fresh):
    events = []
    detach = telemetry.attach(events.append)
    try:
        def my_function(x):
            return x - 7
        jit(my_function, compiler="exla")(nx.tensor([1, 2, 3]))
    finally:
        detach()
    names = [e.name for e in events]
    assert names == ["trace", "lower", "compile"]
    trace = events[0]
    assert trace.function == "my_function" and trace.duration > 0
    assert trace.key == (((3,), nx.types.S32, (None,)),)
    assert all(e.duration >= 0 for e in events)
    jit(my_function, compiler="exla")(nx.tensor([1, 2, 3]))
    assert len(events) == 3  # detached


def test_events_are_logged_at_debug(fresh, caplog):
    with caplog.at_level(logging.DEBUG, logger="nxpy"):
        def logged(x):
            return x + 100
        jit(logged, compiler="exla")(nx.tensor([1]))
    text = caplog.text
    assert "nxpy trace of logged took" in text and "nxpy compile of" in text


def test_recompiling_one_function_many_times_warns_once():
    def shapes_change(x):
        return x + 1
    f = jit(shapes_change)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in range(telemetry.RETRACE_WARNING + 5):
            f(nx.iota((n + 1,)))
    msgs = [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]
    assert len(msgs) == 1, msgs
    assert "shapes_change has been traced and compiled 21 times" in msgs[0]


# ----------------------------------------------------------------------------------------
# The persistent cache
# ----------------------------------------------------------------------------------------
_PROGRAM = textwrap.dedent("""
    import json, sys
    import nxpy as nx
    from nxpy import telemetry
    from nxpy.defn import jit

    def chain(x):  # 2,000 ops
        for _ in range(1000):
            x = x * 1.0001 + 0.5
        return x

    out = jit(chain, compiler="exla")(nx.tensor([1.0, 2.0]))
    print(json.dumps({"out": out.tolist(), "counters": telemetry.counters()}))
""")


def _run(cache_dir, env=None, program=_PROGRAM):
    e = {**os.environ, "NXPY_CACHE_DIR": str(cache_dir), **(env or {})}
    r = subprocess.run([sys.executable, "-W", "always", "-c", program], capture_output=True,
                       text=True, timeout=300, env=e)
    assert r.returncode == 0, r.stderr
    import json
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return res["out"], {k: res["counters"].get(k, 0) for k in
                        ("trace", "lower", "compile", "disk_hit", "disk_miss")}, r.stderr


def _expected():
    x = np.float32([1.0, 2.0])
    for _ in range(1000):
        x = x * np.float32(1.0001) + np.float32(0.5)
    return x


@pytest.fixture(scope="module")
def first_entry(tmp_path_factory):
    """One process's run on an empty cache directory: its result, counters and the one
    entry it wrote (a compile of 2,000 ops in a fresh process: made once per module, each
    test copies the entry into its own directory)."""
    d = tmp_path_factory.mktemp("first")
    out, counters, _ = _run(d)
    files = glob.glob(str(d / "*.exe"))
    return out, counters, files


def _seeded(tmp_path, first_entry):
    """``tmp_path`` holding a copy of the first process's entry; its path."""
    (src,) = first_entry[2]
    path = tmp_path / os.path.basename(src)
    path.write_bytes(open(src, "rb").read())
    return str(path)


def test_a_second_process_loads_instead_of_compiling(tmp_path, first_entry):
    out1, c1, files = first_entry
    assert (c1["compile"], c1["disk_miss"], c1["disk_hit"]) == (1, 1, 0)
    assert len(files) == 1
    _seeded(tmp_path, first_entry)
    out2, c2, _ = _run(tmp_path)
    assert (c2["compile"], c2["disk_hit"]) == (0, 1)
    assert out1 == out2
    np.testing.assert_allclose(out2, _expected(), rtol=1e-5)


# Each damage fails a different check: "empty" the length, "foreign file" the magic,
# "truncated" the payload's hash (all three in disk_cache.load); "garbage payload" passes
# them and PJRT rejects it (compiler.py). Whether the replaced entry then loads in a third
# process is run for one damage of each of the two paths (the other two: under
# `make exhaustive`); every damage checks the replaced entry's header and hash.
_THIRD_RUN = {"truncated", "garbage payload"}


@pytest.mark.parametrize("damage", ["truncated", "garbage payload", "foreign file", "empty"])
def test_a_damaged_entry_is_reported_and_recompiled(tmp_path, damage, first_entry):
    out1 = first_entry[0]
    path = _seeded(tmp_path, first_entry)
    blob = open(path, "rb").read()
    good = blob
    if damage == "truncated":
        blob = blob[:len(blob) // 2]
    elif damage == "garbage payload":  # a header that checks out over a payload PJRT rejects
        payload = bytes(b ^ 0x5A for b in blob[40:])
        blob = blob[:8] + hashlib.sha256(payload).digest() + payload
    elif damage == "foreign file":
        blob = b"not an executable at all" * 10
    else:
        blob = b""
    open(path, "wb").write(blob)
    out2, c2, err = _run(tmp_path)
    assert c2["compile"] == 1 and c2["disk_hit"] == 0
    assert "compiling it again" in err
    assert out2 == out1
    # the entry was replaced: a header (the magic) and the hash of its payload
    new = open(path, "rb").read()
    assert new[:8] == good[:8] and hashlib.sha256(new[40:]).digest() == new[8:40]
    if damage in _THIRD_RUN or FULL_PRODUCT:
        _, c3, _ = _run(tmp_path)  # and it loads
        assert (c3["compile"], c3["disk_hit"]) == (0, 1)


def test_concurrent_processes_share_one_cache_directory(tmp_path):
    env = {**os.environ, "NXPY_CACHE_DIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", _PROGRAM], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert len({o[0].splitlines()[-1].split('"counters"')[0] for o in outs}) == 1
    assert len(glob.glob(str(tmp_path / "*.exe"))) == 1
    assert not glob.glob(str(tmp_path / ".tmp-*"))  # no temporary file left behind


def test_the_cache_is_capped_least_recently_used_first(tmp_path, fresh, monkeypatch):
    monkeypatch.setenv("NXPY_CACHE_MAX_BYTES", "1")  # every store evicts all others
    pjrt.set_cache_dir(tmp_path)
    try:
        for k in range(3):
            jit(lambda x, k=k: x + k, compiler="exla")(nx.tensor([k, k + 1, k + 2, 5, 7]))
        assert len(glob.glob(str(tmp_path / "*.exe"))) <= 1
    finally:
        pjrt.set_cache_dir(None)
    monkeypatch.setenv("NXPY_CACHE_MAX_BYTES", "lots")
    pjrt.set_cache_dir(tmp_path)
    try:
        with pytest.raises(ValueError, match="NXPY_CACHE_MAX_BYTES must be a positive integer"):
            jit(lambda x: x - 3, compiler="exla")(nx.tensor([1, 2, 3, 4, 5, 6]))
    finally:
        pjrt.set_cache_dir(None)


def test_default_options_cache_dir(tmp_path, fresh):
    old = default_options(cache_dir=str(tmp_path))
    try:
        assert pjrt.cache_dir() == str(tmp_path)
        jit(lambda x: x * 11, compiler="exla")(nx.tensor([1, 2, 3, 4, 5, 6, 7]))
        assert fresh()["disk_miss"] == 1 and len(glob.glob(str(tmp_path / "*.exe"))) == 1
        pjrt.compiler._EXECUTABLES.clear()  # as a new process would: loads from the directory
        out = jit(lambda x: x * 11, compiler="exla")(nx.tensor([1, 2, 3, 4, 5, 6, 7]))
        assert out.tolist() == [11, 22, 33, 44, 55, 66, 77]
        assert fresh()["disk_hit"] == 1 and fresh()["compile"] == 1
    finally:
        default_options(cache_dir=old["cache_dir"])
    assert pjrt.cache_dir() == old["cache_dir"]


def test_an_abstract_mesh_runs_where_its_arguments_live(fresh):
    if pjrt.device_count() < 8:
        pytest.skip("needs 8 devices")

    def body(x):
        return x * 10
    mesh = nx.Mesh("abstract", (2, 2), axis_names=("a", "b"))
    assert mesh.is_abstract
    f = shard_jit(body, mesh, input_shardings=[{0: ["a"]}], compiler="exla")
    host = [[nx.tensor(np.full((1, 2), p // 2, np.float32))] for p in range(4)]
    assert [t.device_id for t in f(host)] == [0, 1, 2, 3]  # host tensors: the first devices
    on = [[nx.backend_transfer(a[0], "exla")] for a in host]
    moved = [[nx.tensor(a[0].to_numpy(), backend="exla")] for a in host]
    for p, a in enumerate(moved):  # put partition p's shard on device 7 - p
        a[0] = nx.get_backend("exla").from_numpy(a[0].to_numpy(), a[0].type, device_id=7 - p)
    r = f(moved)
    assert [t.device_id for t in r] == [7, 6, 5, 4]
    assert [t.tolist() for t in r] == [t.tolist() for t in f(on)]
    d = fresh()
    assert d["trace"] == 1 and d["lower"] == 1 and d["compile"] == 2
    # a concrete mesh keeps its devices whatever the arguments' devices
    g = shard_jit(body, nx.Mesh("concrete", (2, 2), axis_names=("a", "b"), devices=[0, 1, 2, 3]),
                  input_shardings=[{0: ["a"]}], compiler="exla")
    assert [t.device_id for t in g(moved)] == [0, 1, 2, 3]


def test_unobserved_work_records_no_events():
    from nxpy import telemetry
    seen = []
    detach = telemetry.attach(seen.append)
    try:
        before = telemetry.counters().get("trace", 0)
        with telemetry.unobserved():
            jit(lambda x: x - 7)(nx.tensor([1]))
        assert telemetry.counters().get("trace", 0) == before and seen == []
        jit(lambda x: x - 8)(nx.tensor([1]))
        assert telemetry.counters()["trace"] == before + 1 and "trace" in [e.name for e in seen]
    finally:
        detach()
