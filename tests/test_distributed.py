"""Meshes across processes (nxpy.distributed, nxpy.launch).

The fast slice runs in this process (one process: the API, helpers, launcher argument
errors, error cases that need no peers). Tests marked ``multiprocess`` launch 2 or 4
processes on loopback (``make distributed``; ``make test`` leaves them out): every
collective, and runtime_call (each process calls the host function for its own devices),
on a 2x2 mesh over 2 processes and a 2x4 mesh over 4 processes gives, device
for device, exactly what the same programs give in this one process on 8 devices, and so
do sharded tensors (device_put, make_array_from_process_local_data, jit, resharding,
process_allgather, a training loop; equal to 1e-5 where sums run in another order); the
Evaluator across processes; examples/gpt.py --mesh 2x2 as 2 processes x 2 devices (the
one-process losses and checkpoint, only process 0 reporting and writing); faults end
with clear errors within their timeouts: a worker or the coordinator lost mid-run (the
survivor raises ProcessLostError whether its main thread waits in a collective, waits
for a training step's result that can never come, or runs Python; exits with status 75
when it stays in a C call), a process that raises, a wrong process count, an unreachable
coordinator, a taken port; a slow process is not declared lost. Two "hosts" that are
not loopback (two network namespaces): tests/test_distributed_netns.py.
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import nxpy as nx
from nxpy import distributed, launch, pjrt, watchdog
from nxpy.defn import all_gather, shard_jit

import distributed_worker as W
from helpers import load_example

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "distributed_worker.py"
multiprocess = pytest.mark.multiprocess


def _env():
    env = dict(os.environ)
    # the tests' folder too: scripts import distributed_worker
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests"),
                                         env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
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
        a.tolist() for a in nx.layout.read_sharding(((0,), (1,)), x.shape, mesh).shard_array(
            x.to_numpy())]
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
    assert len(out) == 4 and f.output_shardings == nx.P(None, "y")
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


def test_watch_hub():
    """The hub tells the others of a process whose connection closes without ``bye``
    (with its error when it sent ``fail``), tells a late joiner what was lost before,
    says nothing of a clean leave, and ends when everyone has gone."""
    hub = socket.create_server(("127.0.0.1", 0))
    t = threading.Thread(target=watchdog.serve, args=(hub, 5.0, 10), daemon=True)
    t.start()
    address = ("127.0.0.1", hub.getsockname()[1])
    conns = []
    for i in range(4):
        conns.append(socket.create_connection(address, timeout=10))
        conns[-1].sendall(f"hello {i}\n".encode())
    conns[3].sendall(b"bye\n")
    conns[3].close()                            # clean: nobody hears of it
    conns[2].close()                            # died
    assert conns[0].recv(200) == b"lost 2 ended without nxpy.distributed.shutdown() (it " \
                                 b"died, was killed, or exited early)\n"
    late = socket.create_connection(address, timeout=10)
    late.sendall(b"hello 4\n")
    assert late.recv(200).startswith(b"lost 2 ")
    conns[1].sendall(b"fail KeyError: 'w'\n")
    conns[1].close()
    assert conns[0].recv(200) == b"lost 1 raised KeyError: 'w'\n"
    assert late.recv(200) == b"lost 1 raised KeyError: 'w'\n"
    for c in (conns[0], late):
        c.sendall(b"bye\n")
        c.close()
    t.join(10)
    assert not t.is_alive()


def test_coordinator_port_in_use():
    """Process 0 of several runs the coordination service in a helper process: a port
    that is taken fails at once, with the reason."""
    code = ("import socket, time; from nxpy import distributed as D\n"
            "s = socket.create_server(('127.0.0.1', 0)); t = time.time()\n"
            "try:\n"
            "    D.initialize(f'127.0.0.1:{s.getsockname()[1]}', 2, 0, 2, timeout=20)\n"
            "except D.DistributedError as e:\n"
            "    print('ERR', round(time.time()-t, 1), e)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True,
                       text=True, timeout=60)
    assert "ERR" in r.stdout, r.stderr
    assert "process 0 could not start the coordination service at 127.0.0.1:" in r.stdout
    assert "Address already in use" in r.stdout
    assert float(r.stdout.split()[1]) < 20


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
    # each output line carries its process's prefix
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert all(ln.startswith(tuple(f"[{p}] " for p in range(n))) for ln in lines)
    return read_results(tmp_path, n)


def read_results(outdir, n):
    """What the worker's ``n`` processes wrote to ``outdir``: ``({name: {partition:
    array}}, [each process's info])``."""
    got, infos = {}, []
    for p in range(n):
        infos.append(json.loads((outdir / f"process{p}.json").read_text()))
        with np.load(outdir / f"process{p}.npz") as z:
            for k in z.files:
                name, part = k.split("|")
                got.setdefault(name, {})[int(part)] = z[k]
    return got, infos


def check_against_reference(got, ref, size):
    assert set(got) == set(ref)
    for name, per in ref.items():
        assert sorted(got[name]) == list(range(size)), name
        for p in range(size):
            if name.startswith("sharded-"):  # sums in another order across processes
                np.testing.assert_allclose(got[name][p], per[p], rtol=1e-5,
                                           err_msg=f"{name} partition {p}")
            else:
                np.testing.assert_array_equal(got[name][p], per[p],
                                              err_msg=f"{name} partition {p}")


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


# A survivor's view of a lost process: the victim (argv[1]) dies at a known time
# (os._exit or SIGKILL, argv[3]); the survivor runs collectives (argv[2] "collective":
# its main thread waits inside a shard_jit all_gather across processes; "step": it reads
# the loss of a training step whose psum spans both processes' devices, which never
# completes when a process is lost) or Python work ("python": a sleep loop), and prints
# when and what it caught.
SURVIVOR = """
import os, signal, sys, time
import nxpy as nx
from nxpy import distributed as D
from nxpy.defn import shard_jit, all_gather
import distributed_worker as W
victim, mode, how = int(sys.argv[1]), sys.argv[2], sys.argv[3]
D.initialize()
me = D.process_index()
mesh = nx.Mesh("m", (2, 2), axis_names=W.AXES)
f = shard_jit(lambda a: all_gather(a, axes=[0], all_gather_dim=0), mesh,
              input_shardings=[{0: [0], 1: [1]}], compiler="exla")
step, w, xs = W.training(mesh, "exla")
try:
    for i in range(100000):
        if mode == "step":
            loss, w = step(w, xs)
            loss.addressable_shards[0].data.to_numpy()
        elif mode == "collective" or i < 5:
            [r.to_numpy() for r in f.call_global(nx.iota((4, 4)))]
        else:
            time.sleep(0.05)
        if i == 5 and me == victim:
            print("DYING", time.time(), flush=True)
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
except D.ProcessLostError as e:
    print("LOST", time.time(), e.process, isinstance(e, D.DistributedError), e, flush=True)
    sys.exit(9)
"""


def run_pair(tmp_path, script, args=(), timeout=60):
    """Runs ``script`` as processes 0 and 1 (no launcher), returns [(code, out, err)]."""
    path = tmp_path / "script.py"
    path.write_text(script)
    env = {**_env(), "NXPY_COORDINATOR": f"127.0.0.1:{launch.free_port()}",
           "NXPY_NUM_PROCESSES": "2", "NXPY_LOCAL_DEVICES": "2"}
    procs = [subprocess.Popen([sys.executable, str(path), *map(str, args)], cwd=ROOT,
                              env={**env, "NXPY_PROCESS_ID": str(i)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        outs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs)]


def _line(out, tag):
    lines = [ln.split() for ln in out.splitlines() if ln.startswith(tag + " ")]
    assert lines, f"no {tag} line in {out!r}"
    return lines[0]


@multiprocess
@pytest.mark.parametrize("victim,how", [(1, "exit"), (0, "kill")])
@pytest.mark.parametrize("mode", ["collective", "step", "python"])
def test_lost_process_raises_in_the_survivor(tmp_path, victim, how, mode):
    """A worker that exits (os._exit) or the coordinator killed (SIGKILL) mid-run: the
    survivor raises ProcessLostError, naming the lost process, within 30 s, whether its
    main thread waits inside a collective across processes, waits for a training step's
    result that can never come, or runs Python code; then it exits with its own status
    (9)."""
    results = run_pair(tmp_path, SURVIVOR, (victim, mode, how))
    code, out, err = results[victim]
    assert code == (-9 if how == "kill" else 3), err[-2000:]
    died = float(_line(out, "DYING")[1])
    code, out, err = results[1 - victim]
    assert code == 9, out[-2000:] + err[-3000:]
    lost = _line(out, "LOST")
    assert lost[2:4] == [str(victim), "True"]  # e.process, a DistributedError
    assert float(lost[1]) - died < 30
    who = "process 0 (the coordinator)" if victim == 0 else "process 1"
    assert f"nxpy.distributed: {who} of 2 was lost: it ended without " in out
    assert "start them all again" in out
    assert "another task died" not in err  # jaxlib did not abort it


STUCK = """
import os, sys, time
import nxpy as nx
from nxpy import distributed as D
D.initialize()
nx.Mesh("m", (2, 2))  # starts the runtime
if D.process_index() == 1:
    time.sleep(1)
    print("DYING", time.time(), flush=True)
    os._exit(3)
time.sleep(120)  # one C call: the main thread never returns to Python in time
"""


@multiprocess
def test_lost_process_while_the_main_thread_is_stuck(tmp_path):
    """A survivor whose main thread stays in one C call (a long sleep; a runtime call
    alike) cannot take the exception: it prints the message and exits with status 75
    within 30 s."""
    t = time.monotonic()
    (code, out, err), (code1, out1, _) = run_pair(tmp_path, STUCK)
    assert code1 == 3
    assert code == 75, err[-3000:]
    assert time.monotonic() - t < 60
    assert "nxpy.distributed: process 1 of 2 was lost" in err
    assert "did not return to Python within 10 s" in err and "exit status 75" in err


RAISER = """
import sys, time
import nxpy as nx
from nxpy import distributed as D
from nxpy.defn import shard_jit, all_gather
D.initialize()
mesh = nx.Mesh("m", (2, 2))
f = shard_jit(lambda a: all_gather(a, axes=[0], all_gather_dim=0), mesh,
              input_shardings=[{0: [0], 1: [1]}], compiler="exla")
try:  # from the first call on: the loss may be announced while process 0 is still in it
    f.call_global(nx.iota((4, 4)))
    if D.process_index() == 1:
        raise ValueError("bad batch in process 1")
    while True:
        [r.to_numpy() for r in f.call_global(nx.iota((4, 4)))]
except D.ProcessLostError as e:
    print("LOST", e.process, e, flush=True)
    sys.exit(9)
"""


@multiprocess
def test_process_that_raises_is_lost_with_its_error(tmp_path):
    """A process ending with an uncaught exception tells the others which one."""
    (code, out, err), (code1, _, err1) = run_pair(tmp_path, RAISER)
    assert code1 == 1 and "ValueError: bad batch in process 1" in err1
    assert code == 9, out + err[-3000:]
    assert _line(out, "LOST")[1] == "1"
    assert "process 1 of 2 was lost: it raised ValueError: bad batch in process 1" in out


SLOW = """
import os, sys, time
import nxpy as nx
from nxpy import distributed as D, pjrt
from nxpy.defn import shard_jit, all_gather
D.initialize()
me = D.process_index()
mesh = nx.Mesh("m", (2, 2))
f = shard_jit(lambda a: all_gather(a, axes=[0], all_gather_dim=0), mesh,
              input_shardings=[{0: [0], 1: [1]}], compiler="exla")
if me == 0:
    print("HELPER", pjrt._state["helper"].pid, flush=True)
for i in range(3):
    if me == 1 and i == 1:
        time.sleep(15)  # slow but alive: process 0 waits inside the all_gather
    out = [r.to_numpy().tolist() for r in f.call_global(nx.iota((4, 4)))]
print("DONE", out == [nx.iota((4, 4)).to_numpy()[:, c:c + 2].tolist() for c in (0, 2)],
      flush=True)
"""


@multiprocess
def test_slow_process_is_not_lost(tmp_path):
    """A process that sleeps 15 s between collectives is not declared lost; both end
    cleanly at interpreter exit (no message), and so does the coordination helper."""
    results = run_pair(tmp_path, SLOW)
    for code, out, err in results:
        assert code == 0, out + err[-3000:]
        assert _line(out, "DONE")[1] == "True"
        assert "nxpy.distributed" not in err and "lost" not in out + err
    helper = int(_line(results[0][1], "HELPER")[1])
    deadline = time.monotonic() + 20
    while Path(f"/proc/{helper}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{helper}").exists() or \
        "Z" in Path(f"/proc/{helper}/stat").read_text().split()[2]


@multiprocess
def test_wrong_num_processes(tmp_path):
    port = launch.free_port()
    code = ("import sys, time; from nxpy import distributed as D; t=time.time()\n"
            "try:\n"
            f"    D.initialize('127.0.0.1:{port}', int(sys.argv[2]), int(sys.argv[1]), 2, "
            "timeout=10)\n"
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


@multiprocess
def test_gpt_example_2x2_over_2_processes(tmp_path):
    """examples/gpt.py --mesh 2x2 as 2 processes x 2 devices (the command the README
    gives): the same losses and checkpoint as the 2x2 run in this one process; only
    process 0 reports and writes."""
    gpt = load_example("gpt")
    steps, size = 4, dict(layers=2, width=32, heads=4, context=16, batch=8)
    cfg = gpt.Config(steps=steps, warmup=2, **size)
    ck, losses_path = tmp_path / "ck.nx", tmp_path / "losses.json"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nxpy.launch", "-n", "2", "--local-devices", "2", "--timeout",
         "150", str(ROOT / "examples" / "gpt.py"), "--mesh", "2x2", "--steps", str(steps),
         "--warmup", "2", *(f"--{k}={v}" for k, v in size.items()), "--every", "2",
         "--val-batches", "1", "--sample", "8", "--plot", "", "--checkpoint", str(ck),
         "--losses", str(losses_path)],
        cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:   # the reference while the processes run
        want, params, state, _ = gpt.run(cfg, mesh=gpt.parse_mesh("2x2"))
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    assert elapsed < 150
    lines = out.splitlines()
    assert "mesh 2x2 over 2 processes" in out
    assert sum(ln.startswith("[0] step ") for ln in lines) == 2
    ours = ("GPT:", "step ", "trained", "wrote", "sample")
    assert not [ln for ln in lines if ln.startswith(tuple(f"[1] {w}" for w in ours))], lines
    assert "[0] sample:" in out
    got = json.loads(losses_path.read_text())
    assert len(got) == steps
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=0)
    saved = nx.load(ck)
    assert int(saved["step"].to_numpy()) == steps
    for a, b in zip(gpt.leaves(saved["params"]) + gpt.leaves(saved["opt_state"]),
                    gpt.leaves(params) + gpt.leaves(state)):
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-5, atol=1e-7)


@multiprocess
def test_gpt_example_resumes_over_2_processes(tmp_path):
    """examples/gpt.py --resume as 2 processes x 2 devices: every process reads the
    checkpoint a 2-step run wrote and places its shards; the 2 steps after it give the
    uninterrupted 4-step run's losses and parameters."""
    gpt = load_example("gpt")
    size = dict(layers=2, width=32, heads=4, context=16, batch=8)
    cfg = gpt.Config(steps=4, warmup=2, **size)
    ck, losses_path = tmp_path / "ck.nx", tmp_path / "losses.json"
    tr = gpt.Trainer(cfg, mesh=gpt.parse_mesh("2x2"))
    _, params, state, _ = gpt.run(cfg, trainer=tr, steps=2)
    gpt.save(ck, params, state, 2)
    proc = subprocess.Popen(
        [sys.executable, "-m", "nxpy.launch", "-n", "2", "--local-devices", "2", "--timeout",
         "150", str(ROOT / "examples" / "gpt.py"), "--mesh", "2x2", "--steps", "4",
         "--warmup", "2", *(f"--{k}={v}" for k, v in size.items()), "--every", "2",
         "--val-batches", "0", "--sample", "0", "--plot", "", "--checkpoint", str(ck),
         "--resume", "--losses", str(losses_path)],
        cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:   # the uninterrupted run while the processes run
        want, params, state, _ = gpt.run(cfg, trainer=tr)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    assert "over 2 processes" in out and "from step 2 to 4" in out
    np.testing.assert_allclose(json.loads(losses_path.read_text()), want[2:], rtol=1e-5,
                               atol=0)
    saved = nx.load(ck)
    assert int(saved["step"].to_numpy()) == 4
    for a, b in zip(gpt.leaves(saved["params"]) + gpt.leaves(saved["opt_state"]),
                    gpt.leaves(params) + gpt.leaves(state)):
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-5, atol=1e-7)
