"""Meshes across processes (nxpy.distributed, nxpy.launch).

The fast slice runs in this process (one process: the API, helpers, launcher argument
errors, error cases that need no peers). Tests marked ``multiprocess`` launch 2 or 4
processes on loopback (``make distributed``; ``make test`` leaves them out): every
collective on a 2x2 mesh over 2 processes and a 2x4 mesh over 4 processes gives, device
for device, exactly what the same programs give in this one process on 8 devices; the
Evaluator across processes; faults (a killed worker, a wrong process count, an
unreachable coordinator) end with clear errors within their timeouts.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import nxpy as nx
from nxpy import distributed, launch, pjrt
from nxpy.defn import all_gather, shard_jit

import distributed_worker as W

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "distributed_worker.py"
multiprocess = pytest.mark.multiprocess


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for var in pjrt.ENV.values():
        env.pop(var, None)
    return env


def _launch(args, timeout=150, **kw):
    return subprocess.run([sys.executable, "-m", "nxpy.launch", *args], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=timeout, **kw)


# ----------------------------------------------------------------------------------------
# One process
# ----------------------------------------------------------------------------------------
def test_single_process_api():
    assert distributed.process_index() == 0 and distributed.process_count() == 1
    assert not distributed.is_initialized()
    mesh = nx.Mesh("m", (2, 2), axis_names=("x", "y"))
    assert mesh.local_partitions == [0, 1, 2, 3] and mesh.processes == (0, 0, 0, 0)
    assert not mesh.is_multiprocess
    distributed.shutdown()  # nothing to shut down: no error


def test_initialize_after_backend_started():
    pjrt.devices()
    with pytest.raises(RuntimeError, match="before anything starts the XLA backend"):
        distributed.initialize("127.0.0.1:1", 2, 0)


def test_initialize_needs_every_argument(monkeypatch):
    for var in pjrt.ENV.values():
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="num_processes was not given and NXPY_NUM_PROCESSES"):
        distributed.initialize("127.0.0.1:1")


def test_platform_after_start_and_unknown():
    with pytest.raises(RuntimeError, match="already started"):
        pjrt.set_platform("cuda")
    with pytest.raises(ValueError, match="NXPY_PLATFORM must be one of"):
        pjrt.set_platform("gpu9")


def test_platform_not_installed():
    r = subprocess.run([sys.executable, "-c", "import nxpy; nxpy.pjrt.devices()"], cwd=ROOT,
                       env={**_env(), "NXPY_PLATFORM": "rocm"}, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0
    assert "nxpy cannot start the 'rocm' platform" in r.stderr and "plugin" in r.stderr


def test_local_shards_and_pieces():
    mesh = nx.Mesh("m", (2, 2), axis_names=("x", "y"))
    x = nx.iota((4, 4))
    shards = distributed.local_shards(x, mesh, {0: ["x"], 1: ["y"]})
    assert [s.to_numpy().tolist() for s in shards] == [
        a.tolist() for a in nx.defn.sharding.shard_array(x.to_numpy(), ((0,), (1,)), mesh)]
    # one process holds every partition: its piece is the whole tensor
    pieces = distributed.from_process_pieces(x, mesh, {0: ["x"], 1: ["y"]})
    assert [p.tolist() for p in pieces] == [s.tolist() for s in shards]


@pytest.mark.parametrize("compiler", ["exla", "evaluator"])
def test_call_global_and_fetch(compiler):
    mesh = nx.Mesh("m", (2, 2), axis_names=("x", "y"))
    f = shard_jit(lambda a: all_gather(a, axes=["x"], all_gather_dim=0), mesh,
                  input_shardings=[{0: ["x"], 1: ["y"]}], compiler=compiler)
    x = nx.iota((4, 4))
    out = f.call_global(x)
    assert len(out) == 4 and f.output_shardings == {1: [1]}
    np.testing.assert_array_equal(distributed.fetch(out, mesh, f.output_shardings).to_numpy(),
                                  x.to_numpy())
    # every partition's argument list (as in one process) gives the same
    args = [[s] for s in distributed.local_shards(x, mesh, {0: ["x"], 1: ["y"]})]
    assert [r.tolist() for r in f(args)] == [r.tolist() for r in out]


def test_shard_jit_rejects_wrong_count():
    mesh = nx.Mesh("m", (2, 2))
    f = shard_jit(lambda a: a, mesh, input_shardings=[{}])
    with pytest.raises(ValueError, match="expected 4 argument lists"):
        f([[nx.tensor(1.0)]] * 3)


def test_to_device_checks_local():
    with pytest.raises(ValueError, match="not to this process|belongs to process"):
        pjrt._state["local"] = frozenset({0})
        try:
            pjrt.to_device(np.zeros(2), 1)
        finally:
            pjrt._state["local"] = frozenset(range(pjrt.device_count()))


def test_launcher_argument_errors(capsys):
    with pytest.raises(SystemExit):
        launch.main(["-n", "2", "--process-id", "1", "x.py"])
    assert "--process-id needs --coordinator" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        launch.main(["-n", "2", "--coordinator", "h:1", "x.py"])


def test_unreachable_coordinator():
    port = launch.free_port()  # nothing listens there
    code = ("import time; from nxpy import distributed as D; t=time.time()\n"
            "try:\n"
            f"    D.initialize('127.0.0.1:{port}', 2, 1, 2, timeout=2)\n"
            "except D.DistributedError as e:\n"
            "    print('ERR', round(time.time()-t, 1), e)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True,
                       text=True, timeout=60)
    assert "ERR" in r.stdout and "could not reach the coordinator" in r.stdout, r.stderr
    assert float(r.stdout.split()[1]) < 10


# ----------------------------------------------------------------------------------------
# Several processes (make distributed)
# ----------------------------------------------------------------------------------------
_REFERENCE = {}


def reference(shape, compiler):
    """The single-process results (this process, 8 devices) of the worker's programs."""
    key = (shape, compiler)
    if key not in _REFERENCE:
        _REFERENCE[key] = W.run(nx.Mesh("mesh", shape, axis_names=W.AXES), compiler)
    return _REFERENCE[key]


def run_workers(tmp_path, n, local, shape, compiler):
    r = _launch(["-n", str(n), "--local-devices", str(local), "--timeout", "150", str(WORKER),
                 str(tmp_path), "x".join(map(str, shape)), compiler], timeout=180)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    got, infos = {}, []
    for p in range(n):
        infos.append(json.loads((tmp_path / f"process{p}.json").read_text()))
        with np.load(tmp_path / f"process{p}.npz") as z:
            for k in z.files:
                name, part = k.split("|")
                got.setdefault(name, {})[int(part)] = z[k]
    # each output line carries its process's prefix
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert all(ln.startswith(tuple(f"[{p}] " for p in range(n))) for ln in lines)
    return got, infos


def check_against_reference(got, ref, size):
    assert set(got) == set(ref)
    for name, per in ref.items():
        assert sorted(got[name]) == list(range(size)), name
        for p in range(size):
            np.testing.assert_array_equal(got[name][p], per[p], err_msg=f"{name} partition {p}")


@multiprocess
def test_2x2_over_2_processes(tmp_path):
    got, infos = run_workers(tmp_path, 2, 2, (2, 2), "exla")
    assert [i["partitions"] for i in infos] == [[0, 1], [2, 3]]
    assert infos[0]["processes"] == [0, 0, 1, 1] and infos[1]["count"] == 2
    check_against_reference(got, reference((2, 2), "exla"), 4)


@multiprocess
def test_2x4_over_4_processes(tmp_path):
    got, infos = run_workers(tmp_path, 4, 2, (2, 4), "exla")
    assert [i["partitions"] for i in infos] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    check_against_reference(got, reference((2, 4), "exla"), 8)


@multiprocess
def test_evaluator_over_2_processes(tmp_path):
    got, _ = run_workers(tmp_path, 2, 2, (2, 2), "evaluator")
    check_against_reference(got, reference((2, 2), "evaluator"), 4)


KILLER = """
import os, sys, time
import nxpy as nx
from nxpy import distributed as D
from nxpy.defn import shard_jit, all_gather
D.initialize()
mesh = nx.Mesh("m", (2, 2))
f = shard_jit(lambda a: all_gather(a, axes=[0], all_gather_dim=0), mesh,
              input_shardings=[{0: [0], 1: [1]}])
for i in range(100000):
    [r.to_numpy() for r in f.call_global(nx.iota((4, 4)))]
    if i == 10:
        print("running", flush=True)
        if D.process_index() == 1:
            os._exit(3)
"""


@multiprocess
def test_killed_worker_under_launcher(tmp_path):
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    t = time.monotonic()
    r = _launch(["-n", "2", "--local-devices", "2", str(script)], timeout=60)
    assert r.returncode != 0
    assert time.monotonic() - t < 30
    assert "process 1 failed (exit status 3); stopped the others" in r.stderr


@multiprocess
def test_killed_worker_alone(tmp_path):
    """Without the launcher: the surviving process ends within 30 s with the runtime's
    message that another process died."""
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    port = launch.free_port()
    env = {**_env(), "NXPY_COORDINATOR": f"127.0.0.1:{port}", "NXPY_NUM_PROCESSES": "2",
           "NXPY_LOCAL_DEVICES": "2"}
    procs = [subprocess.Popen([sys.executable, str(script)], cwd=ROOT,
                              env={**env, "NXPY_PROCESS_ID": str(i)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    t = time.monotonic()
    try:
        out0, err0 = procs[0].communicate(timeout=60)
        procs[1].communicate(timeout=10)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert procs[1].returncode == 3
    assert procs[0].returncode != 0
    assert time.monotonic() - t < 30
    assert "another task died" in err0


@multiprocess
def test_wrong_num_processes(tmp_path):
    port = launch.free_port()
    code = ("import sys, time; from nxpy import distributed as D; t=time.time()\n"
            "try:\n"
            f"    D.initialize('127.0.0.1:{port}', int(sys.argv[2]), int(sys.argv[1]), 2, timeout=10)\n"
            "except D.DistributedError as e:\n"
            "    print('ERR', round(time.time()-t, 1), e)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i), n], cwd=ROOT, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, n in enumerate(["2", "3"])]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    for out in outs:
        assert "ERR" in out and "start every process with the same count" in out
        assert float(out.split()[1]) < 10


@multiprocess
def test_train_example_data_parallel_over_2_processes():
    """examples/train.py --data-parallel over 2 processes (each holding half the batch):
    the same loss curve as the jit step in this one process."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("nxpy_example_train_dp",
                                                  ROOT / "examples" / "train.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    steps = 8
    r = _launch(["-n", "2", "--local-devices", "2", "--timeout", "120",
                 str(ROOT / "examples" / "train.py"), "--data-parallel", str(steps)], timeout=150)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    got = [float(ln.split()[-1]) for ln in r.stdout.splitlines() if ln.startswith("[0] loss ")]
    assert "data parallel over 2 process(es)" in r.stdout
    np.testing.assert_allclose(got, train.train("exla", steps), rtol=1e-6, atol=0)
