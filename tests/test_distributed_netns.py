"""Two "hosts" that are not loopback: a mesh across two network namespaces.

Every other test of ``make distributed`` runs its processes on 127.0.0.1, where a process
that tells its peers to reach it at a loopback address is still reached. Here each
process has a network stack of its own: the test makes two network namespaces
(``ip netns add``) joined by a veth pair, with addresses it chooses (10.A.B.1/24 and
10.A.B.2/24; the names carry this process's id and a counter, so parallel runs do not
collide), brings each namespace's own loopback up, and checks that each reaches the
other's veth address but not a port that listens on the other's loopback. The
coordinator (process 0) runs in one namespace and the worker in the other, each started
as on a host of its own (``ip netns exec NS python -m nxpy.launch -n 2 --coordinator
10.A.B.1:PORT --process-id I ...``), so gloo's collectives cross the veth link:

* the coordinator address is the veth address, and each process's gloo collectives listen
  on its own veth address (jaxlib's default is the address the hostname resolves to,
  127.0.0.1 here: the first collective would fail);
* sharded tensors (device_put, make_array_from_process_local_data, jit, resharding,
  process_allgather) and three steps of a training loop equal, shard for shard, the same
  program in this one process (to 1e-5: sums run in another order);
* the worker killed (SIGKILL) mid-step: the coordinator, waiting in a collective, raises
  ProcessLostError naming it within 30 s.

Skipped, with the reason, where namespaces cannot be made (not Linux, not root, no ``ip``,
``ip netns add`` refused). Every namespace and veth a test made is deleted after it,
passed or failed (with any process still inside), and those of an earlier run that died
before its clean-up (its process gone) are deleted by the next. Every command and process
is bounded in time.
"""
import itertools
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from typing import NamedTuple

import pytest

import nxpy as nx

import distributed_worker as W
from test_distributed import ROOT, WORKER, _env, _line, check_against_reference, read_results

multiprocess = pytest.mark.multiprocess
PORT = 29500  # the coordinator's: the namespaces are new, nothing else listens there
IP_TIMEOUT = 20
_made = itertools.count()
_NAME = re.compile(r"^nxpy(\d+)x\d+[ab]$")  # ours: nxpy<pid>x<n>a|b (veths: nxv<pid>x<n>a|b)


class Hosts(NamedTuple):
    ns: tuple        # the two namespaces' names
    veths: tuple     # the veth in each
    addresses: tuple  # each veth's address


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT)
    if check and r.returncode:
        raise AssertionError(f"ip {' '.join(args)} failed: {r.stderr.strip()}")
    return r


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _delete(ns, veths):
    """Kills what still runs in the namespaces (a coordination helper, say), deletes them
    (their veths go with them) and any veth left in this namespace by a half-made pair."""
    for name in ns:
        r = _ip("netns", "pids", name, check=False)
        for pid in r.stdout.split() if r.returncode == 0 else ():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        _ip("netns", "delete", name, check=False)
    have = _ip("-o", "link", "show", check=False).stdout
    for v in veths:
        if re.search(rf"^\d+: {v}[@:]", have, re.M):
            _ip("link", "delete", v, check=False)


def _sweep():
    """Deletes the namespaces and veths of earlier runs whose process is gone."""
    stale = {m.group(0) for m in map(_NAME.match, _ip("netns", "list", check=False)
                                     .stdout.split()) if m and not _alive(int(m.group(1)))}
    veths = re.findall(r"^\d+: (nxv(\d+)x\d+[ab])[@:]", _ip("-o", "link", "show",
                                                            check=False).stdout, re.M)
    _delete(sorted(stale), [v for v, pid in veths if not _alive(int(pid))])


@pytest.fixture
def hosts():
    """Two network namespaces joined by a veth pair, deleted afterwards."""
    if sys.platform != "linux":
        pytest.skip(f"network namespaces are Linux's (this is {sys.platform})")
    if os.geteuid() != 0:
        pytest.skip(f"making network namespaces (ip netns add) needs root; this runs as uid "
                    f"{os.geteuid()}")
    if shutil.which("ip") is None:
        pytest.skip("no `ip` command (iproute2) to make network namespaces with")
    _sweep()
    tag = f"{os.getpid()}x{next(_made)}"
    ns, veths = (f"nxpy{tag}a", f"nxpy{tag}b"), (f"nxv{tag}a", f"nxv{tag}b")
    r = random.Random(tag + str(time.time_ns()))
    net = f"10.{r.randrange(200, 250)}.{r.randrange(256)}"
    addresses = (f"{net}.1", f"{net}.2")
    made = _ip("netns", "add", ns[0], check=False)
    if made.returncode:
        pytest.skip(f"`ip netns add` was refused: {made.stderr.strip()}")
    try:
        _ip("netns", "add", ns[1])
        _ip("link", "add", veths[0], "netns", ns[0], "type", "veth", "peer", "name", veths[1],
            "netns", ns[1])
        for name, veth, address in zip(ns, veths, addresses):
            _ip("-n", name, "addr", "add", f"{address}/24", "dev", veth)
            _ip("-n", name, "link", "set", veth, "up")
            _ip("-n", name, "link", "set", "lo", "up")  # down in a new namespace
        hosts = Hosts(ns, veths, addresses)
        _check_apart(hosts)
        yield hosts
    finally:
        _delete(ns, veths)


SERVE = """
import socket, sys
veth = socket.create_server((sys.argv[1], 0))
port = veth.getsockname()[1]
lo = socket.create_server(("127.0.0.1", port))  # the same port on this namespace's loopback
print(port, flush=True)
veth.settimeout(15)
veth.accept()
"""
PROBE = """
import socket, sys
for host in (sys.argv[1], "127.0.0.1"):
    try:
        socket.create_connection((host, int(sys.argv[2])), timeout=5).close()
        print(host, "connected")
    except OSError as e:
        print(host, type(e).__name__)
"""


def _in(ns, argv, **kw):
    return subprocess.Popen(["ip", "netns", "exec", ns, *argv], cwd=ROOT, **kw)


def _check_apart(h):
    """Each namespace has its own loopback and the veth only: from the second, a port
    that listens on the first's veth address and loopback is reached on the veth address
    only; each routes the other's address through its veth."""
    for name, veth, other in zip(h.ns, h.veths, reversed(h.addresses)):
        links = _ip("-n", name, "-o", "link", "show").stdout
        assert re.findall(r"^\d+: ([^@:]+)", links, re.M) == ["lo", veth], links
        route = _ip("-n", name, "route", "get", other).stdout
        assert f"dev {veth} " in route and "dev lo" not in route, route
    server = _in(h.ns[0], [sys.executable, "-c", SERVE, h.addresses[0]], stdout=subprocess.PIPE,
                 text=True)
    try:
        ready, _, _ = select.select([server.stdout], [], [], 15)
        assert ready, "the listener in the first namespace did not start"
        port = server.stdout.readline().strip()
        probe = subprocess.run(["ip", "netns", "exec", h.ns[1], sys.executable, "-c", PROBE,
                                h.addresses[0], port], capture_output=True, text=True,
                               timeout=30)
        assert probe.stdout.split("\n")[:2] == [f"{h.addresses[0]} connected",
                                                "127.0.0.1 ConnectionRefusedError"], probe
    finally:
        server.kill()
        server.wait()


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.communicate()


@multiprocess
def test_sharded_training_across_namespaces(hosts, tmp_path):
    """The coordinator in one namespace, the worker in the other: sharded tensors and a
    training loop give what they give in this one process, over gloo on the veth link."""
    coordinator = f"{hosts.addresses[0]}:{PORT}"
    procs = [_in(ns, [sys.executable, "-m", "nxpy.launch", "-n", "2", "--coordinator",
                      coordinator, "--process-id", str(i), "--local-devices", "2", "--timeout",
                      "150", str(WORKER), str(tmp_path), "2x2", "exla", "sharded"],
                 env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, ns in enumerate(hosts.ns)]
    try:  # the one-process results while they run
        want = W.run(nx.Mesh("mesh", (2, 2), axis_names=W.AXES), "exla", "sharded")
        outs = [p.communicate(timeout=180) for p in procs]
    finally:
        _stop(procs)
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, out[-3000:] + err[-3000:]
    got, infos = read_results(tmp_path, 2)
    assert [i["partitions"] for i in infos] == [[0, 1], [2, 3]]
    for i, info in enumerate(infos):
        assert info["coordinator"] == coordinator
        assert info["gloo"] == {"hostname": hosts.addresses[i]}, info
    assert {f"sharded-loss{i}" for i in range(3)} | {"sharded-weights"} <= set(got)
    check_against_reference(got, want, 4)


TRAINER = """
import sys, time
import nxpy as nx
from nxpy import distributed as D, pjrt
import distributed_worker as W
D.initialize()
mesh = nx.Mesh("mesh", (2, 2), axis_names=W.AXES)
step, w, xs = W.training(mesh, "exla")
print("GLOO", D.process_index(), pjrt._state["dist"]["gloo"]["hostname"], flush=True)
try:
    for i in range(10 ** 6):
        loss, w = step(w, xs)
        loss.addressable_shards[0].data.to_numpy()  # this step done
        if i < 20:
            print("STEP", i, time.time(), flush=True)
except D.ProcessLostError as e:
    print("LOST", time.time(), e.process, isinstance(e, D.DistributedError), e, flush=True)
    sys.exit(9)
"""


@multiprocess
def test_killed_worker_across_namespaces(hosts, tmp_path):
    """The worker (in the second namespace) killed mid-step: the coordinator, in its own
    step's collectives, raises ProcessLostError naming it within 30 s."""
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    env = {**_env(), "NXPY_COORDINATOR": f"{hosts.addresses[0]}:{PORT}",
           "NXPY_NUM_PROCESSES": "2", "NXPY_LOCAL_DEVICES": "2", "NXPY_DIST_TIMEOUT": "60"}
    logs = [tmp_path / "out0.txt", tmp_path / "err0.txt"]
    with logs[0].open("w") as out0, logs[1].open("w") as err0:
        procs = [_in(hosts.ns[0], [sys.executable, str(script)],
                     env={**env, "NXPY_PROCESS_ID": "0"}, stdout=out0, stderr=err0, text=True),
                 _in(hosts.ns[1], [sys.executable, str(script)],
                     env={**env, "NXPY_PROCESS_ID": "1"}, stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, text=True)]
    worker, seen = procs[1], []
    try:
        deadline = time.monotonic() + 120
        while not any(ln.startswith("STEP 5 ") for ln in seen):
            ready, _, _ = select.select([worker.stdout], [], [], 1)
            line = worker.stdout.readline() if ready else ""
            assert line or worker.poll() is None, "".join(seen)[-3000:]
            assert time.monotonic() < deadline, "".join(seen)[-3000:]
            seen.append(line)
        os.kill(worker.pid, signal.SIGKILL)  # `ip netns exec` execs: this is Python
        killed = time.time()
        procs[0].wait(timeout=60)
    finally:
        _stop(procs)
    out, err = logs[0].read_text(), logs[1].read_text()
    assert worker.returncode == -signal.SIGKILL
    assert _line("".join(seen), "GLOO")[1:] == ["1", hosts.addresses[1]]
    assert _line(out, "GLOO")[1:] == ["0", hosts.addresses[0]]
    assert procs[0].returncode == 9, out[-2000:] + err[-3000:]
    lost = _line(out, "LOST")
    assert lost[2:4] == ["1", "True"]  # e.process, a DistributedError
    assert float(lost[1]) - killed < 30
    assert "nxpy.distributed: process 1 of 2 was lost: it ended without " in out
    assert "another task died" not in err  # jaxlib did not abort it

