"""PJRT's distributed runtime (several processes, one global device set):
:func:`initialize_distributed` before the client starts, the coordination service in a
helper process, nxpy's watch of the processes (:mod:`nxpy.watchdog`),
:func:`allgather_bytes` through the key-value store, :func:`shutdown_distributed`."""
from __future__ import annotations

import atexit
import ctypes
import ipaddress
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

from .. import watchdog
from . import lib
from .lib import _import


class DistributedError(RuntimeError):
    """The distributed runtime could not start, or lost a process."""


class ProcessLostError(DistributedError):
    """Another process of the distributed program was lost (it died, was killed, raised,
    or exited without :func:`shutdown_distributed`): the collectives it takes part in can
    never complete. ``process`` is its index (-1: the coordination service itself).
    Raised in the main thread by nxpy's watch (see :mod:`nxpy.watchdog`), or by the
    runtime call that failed; with no arguments it takes the watch's message."""

    def __init__(self, *args):
        w = lib._state.get("watch")
        lost = w is not None and w.lost is not None
        super().__init__(*(args or ((w.message,) if lost else ())))
        self.process = w.lost if lost else None
        if lost:
            w.taken()


#: jaxlib's heartbeat timeout (s) when nxpy watches the processes: so long that it never
#: fires, since all jaxlib can do then is abort the survivors
_JAXLIB_HEARTBEAT = 7 * 24 * 3600


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _split_address(address: str):
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"coordinator_address must be 'host:port', got {address!r}")
    return host, int(port)


def initialize_distributed(coordinator_address: str, num_processes: int, process_id: int, *,
                           local_device_count=None, timeout: float = 60.0,
                           heartbeat_timeout: int = 10) -> None:
    """Connects this process to PJRT's distributed runtime (process 0 also runs the
    coordination service at ``coordinator_address``). Must come before the client starts.
    Raises :class:`DistributedError` when the coordinator cannot be reached within
    ``timeout`` seconds, or when the processes disagree on ``num_processes``.

    With several processes, process 0 runs the coordination service in a helper process
    (so that the service outlives process 0: jaxlib aborts every process whose service is
    gone), and every process joins the helper's watch (:mod:`nxpy.watchdog`): when a
    process is lost, the others raise :class:`ProcessLostError` in their main thread
    within a moment, or, when their main thread stays blocked in the runtime for
    :data:`nxpy.watchdog.GRACE` seconds, print why and exit with
    :data:`nxpy.watchdog.EXIT_STATUS`. ``heartbeat_timeout``: how long a process whose
    host stops answering (TCP keepalives) may take to be declared lost.

    On CPU, gloo listens on this host's address toward the coordinator (or on the
    interface ``NXPY_GLOO_INTERFACE`` names; :func:`_use_gloo_address`)."""
    if "client" in lib._state:
        raise RuntimeError(
            "nxpy.distributed.initialize must be called before anything starts the XLA "
            "backend (creating a Mesh, an EXLA tensor, a jit call, nxpy.pjrt.devices(), or "
            "jax itself); call it first in the program")
    if "dist" in lib._state:
        raise RuntimeError("nxpy.distributed.initialize was already called in this process")
    host, port = _split_address(coordinator_address)
    interface = _gloo_interface()
    if not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"num_processes must be a positive int, got {num_processes!r}")
    if not isinstance(process_id, int) or not 0 <= process_id < num_processes:
        raise ValueError(f"process_id must be an int in [0, {num_processes}), got {process_id!r}")
    jax = _import()
    from jax._src import distributed as jdist
    if jdist.global_state.client is not None:
        raise RuntimeError("jax.distributed was already initialized in this process: let "
                           "nxpy.distributed.initialize do it (and only once)")
    if local_device_count is not None:
        lib._state["local_devices"] = int(local_device_count)
    bind = f"{host}:{port}" if _loopback(host) else f"0.0.0.0:{port}"
    wait = max(1, int(round(timeout)))
    try:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except Exception:  # pragma: no cover - another jaxlib
        pass
    try:
        hub = _start_runtime(jdist.global_state, f"{host}:{port}", bind, num_processes,
                             process_id, wait, int(heartbeat_timeout))
        gloo = _use_gloo_address(jdist.global_state.client, host, port, interface) \
            if num_processes > 1 else None
    except DistributedError:
        _reset_jax_distributed(jdist)
        raise
    except Exception as e:
        _reset_jax_distributed(jdist)
        raise DistributedError(
            f"process {process_id} could not join the distributed runtime at "
            f"{coordinator_address} within {wait} s ({num_processes} processes expected): "
            f"{type(e).__name__}: {_first_line(e)}. Check that process 0 runs with the same "
            f"coordinator address and num_processes, that every process was started, and "
            f"that the port is reachable") from None
    lib._state["dist"] = {"address": f"{host}:{port}", "num_processes": num_processes,
                      "process_id": process_id, "timeout_ms": wait * 1000,
                      "kv": jdist.global_state.client, "seq": 0, "gloo": gloo}
    # every process must agree on the number of processes: each compares with process
    # 0's, and process 0 with everyone's
    kv = jdist.global_state.client
    others = range(1, num_processes) if process_id == 0 else [0]
    try:
        kv.key_value_set(f"nxpy/num_processes/{process_id}", str(num_processes))
        theirs = {p: int(kv.blocking_key_value_get(f"nxpy/num_processes/{p}", wait * 1000))
                  for p in others}
    except Exception as e:
        raise DistributedError(f"process {process_id}: the coordination service did not "
                               f"answer within {wait} s: {_first_line(e)}") from None
    for p, n in theirs.items():
        if n != num_processes:
            raise DistributedError(
                f"process {process_id} was started with num_processes={num_processes} but "
                f"process {p} with num_processes={n}: start every process with the same count")
    if num_processes > 1:
        _join_watch(kv, host, hub, num_processes, process_id, wait, heartbeat_timeout)


def _join_watch(kv, host, hub, num_processes, process_id, wait, heartbeat):
    """Connects this process to the watch hub (its port published by process 0 in the
    key-value store) and arranges a clean leave at exit."""
    try:
        if process_id == 0:
            kv.key_value_set("nxpy/watch", str(hub))
        port = int(kv.blocking_key_value_get("nxpy/watch", wait * 1000))
        lib._state["watch"] = watchdog.Watch(
            (host.strip("[]"), port), process_id, timeout=wait, keepalive_seconds=heartbeat,
            error=ProcessLostError,
            describe=lambda p, why: _lost_message(p, why, process_id, num_processes))
    except Exception as e:
        raise DistributedError(f"process {process_id} could not join nxpy's watch of the "
                               f"processes at {host}: {_first_line(e)}") from None
    if not lib._state.get("exit_hooks"):
        lib._state["exit_hooks"] = True
        atexit.register(_at_exit)  # after jax's own: runs first, before its shutdown
        previous = sys.excepthook

        def excepthook(kind, value, tb):
            w = lib._state.get("watch")
            if w is not None and w.lost is None:  # tell the others why this one ends
                w.failed = f"{kind.__name__}: {_first_line(value)}" if str(value) else \
                    kind.__name__
            previous(kind, value, tb)
        sys.excepthook = excepthook


def _lost_message(process, why, me, n) -> str:
    if process is None:
        return (f"nxpy.distributed: process {me} lost the coordination service (the helper "
                f"process 0 started; {why}): the processes can no longer coordinate. Stop "
                f"every process and start them all again")
    who = "process 0 (the coordinator)" if process == 0 else f"process {process}"
    return (f"nxpy.distributed: {who} of {n} was lost: it {why}. Process {me} cannot "
            f"complete collectives without it; stop every process (python -m nxpy.launch "
            f"does) and start them all again")


def _at_exit():
    w = lib._state.get("watch")
    if w is not None and "dist" in lib._state:
        w.exiting = True
        shutdown_distributed()


def _start_runtime(gs, address, bind, num_processes, process_id, wait, heartbeat):
    """What ``jax.distributed.initialize`` does (jax's global state is filled in, so
    jax's CPU client gets gloo collectives over it), with nxpy's timeouts and without
    the preemption service (which would catch the launcher's SIGTERM). Returns the watch
    hub's port on process 0 (None elsewhere).

    jaxlib ends a process (SIGABRT, "Terminating process because the JAX distributed
    service detected fatal errors ... another task died") when its heartbeat notices a
    lost process, and at once when the coordination service goes away; jaxlib 0.10.2
    cannot hand that status to Python instead (``missed_heartbeat_callback`` fails with
    std::bad_cast). So with several processes the heartbeat is set out of the way, the
    service runs in a helper process (:func:`_coordinator_main`) that outlives process
    0, and nxpy's watch notices lost processes (:mod:`nxpy.watchdog`)."""
    from jaxlib import _jax
    hub = None
    if num_processes > 1:
        hub = _spawn_coordinator(bind, num_processes, wait, heartbeat, process_id)
        heartbeat = _JAXLIB_HEARTBEAT
    elif process_id == 0:
        gs.service = _jax.get_distributed_runtime_service(
            bind, num_processes, heartbeat_timeout=heartbeat, shutdown_timeout=wait)
    if process_id != 0:  # the runtime aborts the process when it cannot connect: find out first
        _wait_for_coordinator(address, wait, process_id)
    gs.num_processes = num_processes
    gs.process_id = process_id
    gs.coordinator_address = address
    gs.client = _jax.get_distributed_runtime_client(
        address, process_id, init_timeout=wait, heartbeat_timeout=heartbeat,
        shutdown_timeout=wait, use_compression=True, shutdown_on_destruction=False)
    # the runtime also aborts when not every process joins in time: say why first
    late = threading.Timer(max(0.5, wait - 0.5), lambda: os.write(2, (
        f"nxpy.distributed: process {process_id}: not all {num_processes} processes joined "
        f"the coordinator at {address} within {wait} s (is every process started, with the "
        f"same num_processes?); the runtime will end this process\n").encode()))
    late.daemon = True
    late.start()
    try:
        gs.client.connect()
    finally:
        late.cancel()
    return hub


def _route_address(host: str, port: int):
    """This host's address on its route to ``host`` (a UDP socket's, connected: no packet
    is sent): the address the other processes reach this one at. None without a route."""
    try:
        family, _, _, _, where = socket.getaddrinfo(host.strip("[]"), port,
                                                    type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect(where)
            return s.getsockname()[0]
    except OSError:
        return None


def _gloo_interface():
    """The network interface ``NXPY_GLOO_INTERFACE`` names for gloo (None: not set),
    checked to exist here."""
    name = os.environ.get("NXPY_GLOO_INTERFACE", "").strip()
    if not name:
        return None
    try:
        socket.if_nametoindex(name)
    except OSError:
        raise ValueError(f"NXPY_GLOO_INTERFACE must name a network interface of this host "
                         f"(the one the other processes reach it on; see `ip addr`), got "
                         f"{name!r}") from None
    return name


def _use_gloo_address(client, host, port, interface=None):
    """Makes jax's CPU client (not started yet) take gloo collectives that listen on
    ``interface`` (``NXPY_GLOO_INTERFACE``), else on this host's address toward the
    coordinator; returns ``{"interface": ...}`` or ``{"hostname": ...}`` (None: jaxlib's
    own choice, when jax's CPU client already exists or there is no route).

    Left to itself, jaxlib's gloo listens on (and tells the others) the address this
    machine's hostname resolves to, often 127.0.0.1 or 127.0.1.1 (/etc/hosts): a process
    on another host then connects to its own loopback and the first collective fails."""
    from jax._src import xla_bridge
    from jax.extend import backend as jeb
    from jaxlib import _jax
    where = {"interface": interface} if interface else {"hostname": _route_address(host, port)}
    if None in where.values():
        return None

    def cpu_client():
        return xla_bridge.make_cpu_client(collectives=_jax.make_gloo_tcp_collectives(
            distributed_client=client, **where))
    try:
        jeb.register_backend_factory("cpu", cpu_client, priority=0, fail_quietly=False)
    except RuntimeError:  # jax started its CPU client itself, before nxpy
        return None
    return where


def _spawn_coordinator(bind, num_processes, wait, heartbeat, process_id):
    """On process 0: starts the helper process that runs the coordination service and
    the watch hub, and returns the hub's port. The helper has its own session (the
    launcher's stop and a terminal's Ctrl-C reach it only through the processes it
    serves) and ends when every process has left its hub."""
    if process_id != 0:
        return None
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    code = ("import sys; from nxpy.pjrt import distributed; "
            "distributed._coordinator_main(sys.argv[1:])")
    helper = subprocess.Popen(
        [sys.executable, "-c", code, bind, str(num_processes), str(wait), str(heartbeat)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env, start_new_session=True)
    lib._state["helper"] = helper
    ready, _, _ = select.select([helper.stdout], [], [], wait)
    line = helper.stdout.readline().decode(errors="replace").strip() if ready else ""
    helper.stdout.close()
    if not line.startswith("ready "):
        if helper.poll() is None:
            helper.kill()
        code = helper.wait()
        why = line.partition(" ")[2] or (
            f"its helper process ended (status {code}) before it served: is the port in use?"
            if ready else f"its helper process did not start within {wait} s")
        raise DistributedError(f"process 0 could not start the coordination service at "
                               f"{bind}: {why}")
    return int(line.split()[1])


def _coordinator_main(argv):
    """The helper process (``python -c ...`` from :func:`_spawn_coordinator`): runs the
    coordination service at ``bind`` and the watch hub beside it, says ``ready PORT``
    (or ``error MESSAGE``) on stdout, and ends when every process has left the hub."""
    bind, num_processes, wait, heartbeat = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C ends the processes, then this
    try:
        host, port = _split_address(bind)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # jaxlib may crash on a port it cannot bind: try it first
        socket.create_server((host.strip("[]"), port), family=family).close()
        from jaxlib import _jax
        service = _jax.get_distributed_runtime_service(
            bind, num_processes, heartbeat_timeout=_JAXLIB_HEARTBEAT, shutdown_timeout=wait)
        listener = socket.create_server((host.strip("[]"), 0), family=family)
    except Exception as e:
        print(f"error {type(e).__name__}: {_first_line(e)}", flush=True)
        return
    print(f"ready {listener.getsockname()[1]}", flush=True)
    sys.stdout.close()
    watchdog.serve(listener, first_wait=wait + 5, keepalive_seconds=heartbeat)
    listener.close()
    service.shutdown()


def _wait_for_coordinator(address, wait, process_id):
    host, port = _split_address(address)
    deadline = time.monotonic() + wait
    while True:
        try:
            with socket.create_connection((host.strip("[]"), port), timeout=1.0):
                return
        except OSError as e:
            if time.monotonic() > deadline:
                raise DistributedError(
                    f"process {process_id} could not reach the coordinator at {address} "
                    f"within {wait} s ({e}): is process 0 running, with this address?") from None
            time.sleep(0.2)


def _first_line(e) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _reset_jax_distributed(jdist):
    st = jdist.global_state
    for attr in ("client", "service"):
        obj = getattr(st, attr, None)
        if obj is not None:
            try:
                obj.shutdown()
            except Exception:
                pass
            setattr(st, attr, None)


ENV = {"coordinator_address": "NXPY_COORDINATOR", "num_processes": "NXPY_NUM_PROCESSES",
       "process_id": "NXPY_PROCESS_ID", "local_device_count": "NXPY_LOCAL_DEVICES",
       "timeout": "NXPY_DIST_TIMEOUT"}


def distributed_from_env(**given) -> dict:
    """``initialize_distributed``'s arguments: those given, else from the environment
    (``NXPY_COORDINATOR``, ``NXPY_NUM_PROCESSES``, ``NXPY_PROCESS_ID``,
    ``NXPY_LOCAL_DEVICES``, ``NXPY_DIST_TIMEOUT``, which ``python -m nxpy.launch`` sets)."""
    out = {}
    for key, var in ENV.items():
        v = given.get(key)
        if v is None and os.environ.get(var):
            raw = os.environ[var]
            try:
                v = raw if key == "coordinator_address" else (
                    float(raw) if key == "timeout" else int(raw))
            except ValueError:
                raise ValueError(f"{var} must be {'a number' if key == 'timeout' else 'an integer'}"
                                 f", got {raw!r}") from None
        if v is not None:
            out[key] = v
    return out


def distributed_info():
    """``{"address", "num_processes", "process_id"}`` when initialized, else None."""
    d = lib._state.get("dist")
    return None if d is None else {k: d[k] for k in ("address", "num_processes", "process_id")}


def shutdown_distributed() -> None:
    """Leaves the distributed runtime (waits for the other processes to leave too). After
    a process was lost there is no one to wait for: the runtime is left as it is."""
    if "dist" not in lib._state:
        return
    jax = lib._state.get("jax") or _import()
    w = lib._state.get("watch")
    try:
        if w is not None and (w.lost is not None or w.failed):
            _abandon()  # the shutdown barrier would wait for the lost process forever
        else:
            jax.distributed.shutdown()
    finally:
        lib._state.pop("dist", None)
        if w is not None:
            w.close()
            # kept (its connection open) until the process ends: see Watch.close
            lib._state.setdefault("left_watches", []).append(lib._state.pop("watch"))


def _abandon():
    """Forgets the runtime client without its shutdown barrier (kept referenced: it was
    made with shutdown_on_destruction=False, and is never destroyed mid-exit), and keeps
    the XLA client from being destroyed at exit: a collective that lost a process may
    never complete, and destroying the client waits for it (jax's own clean-up at exit
    would hang until the coordination service goes, which aborts the process)."""
    from jax._src import api, distributed as jdist
    gs = jdist.global_state
    kept = [gs.client, gs.service, lib._state.get("client")]
    lib._state.setdefault("abandoned", []).extend(kept)
    for obj in kept:  # not freed either when the interpreter clears the modules at exit
        if obj is not None:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    atexit.unregister(api.clean_up)
    gs.client = gs.service = None


def wait_ready(buffers) -> None:
    """Returns when every buffer is computed; in a distributed program, raises
    :class:`ProcessLostError` as soon as the watch hears of a lost process instead: a
    collective that lost a process may never complete (a psum over local and remote
    devices waits for a local device that has already failed), and a main thread blocked
    in it could not take the error. In one process it returns at once (the caller then
    waits in the runtime)."""
    w = lib._state.get("watch")
    if w is None:
        return
    pending = [b for b in buffers if not b.is_ready()]
    delay = 5e-5
    while pending:
        if w.wait_lost(delay):
            raise ProcessLostError()
        pending = [b for b in pending if not b.is_ready()]
        delay = min(2 * delay, 1e-3)


def _lost_error():
    """The :class:`ProcessLostError` to raise when the watch knows that a process was
    lost, else None."""
    w = lib._state.get("watch")
    return ProcessLostError() if w is not None and w.lost is not None else None


def allgather_bytes(payload: bytes) -> list:
    """Every process's ``payload``, in process order, through the coordination service's
    key-value store (for small host-side exchanges; every process must call it the same
    number of times, in the same order, as for any collective)."""
    d = lib._state.get("dist")
    if d is None:
        return [payload]
    d["seq"] += 1
    seq, me, kv, ms = d["seq"], d["process_id"], d["kv"], d["timeout_ms"]
    kv.key_value_set_bytes(f"nxpy/x/{seq}/{me}", payload)
    out = []
    for p in range(d["num_processes"]):
        out.append(payload if p == me else _kv_get_bytes(kv, f"nxpy/x/{seq}/{p}", ms, me, p))
    if seq > 2:  # having read everyone's round seq-1, everyone has read all of seq-2
        try:
            kv.key_value_delete(f"nxpy/x/{seq - 2}/{me}")
        except ProcessLostError:  # raised in this thread by the watch: never swallowed
            raise
        except Exception:
            pass
    return out


def _kv_get_bytes(kv, key, ms, me, p):
    """``kv.blocking_key_value_get_bytes`` in slices of a second, so that a lost process
    raises :class:`ProcessLostError` at once rather than after the whole timeout."""
    deadline = time.monotonic() + ms / 1000
    while True:
        lost = _lost_error()
        if lost is not None:
            raise lost
        left = deadline - time.monotonic()
        try:
            return kv.blocking_key_value_get_bytes(key, max(1, min(1000, int(left * 1000))))
        except ProcessLostError:
            raise
        except Exception as e:
            if left <= 1.0 or "DEADLINE_EXCEEDED" not in str(e):
                raise DistributedError(
                    f"process {me}: process {p} did not send its data within {ms // 1000} s "
                    f"(has it stopped?): {_first_line(e)}") from None
