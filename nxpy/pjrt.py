"""Every jaxlib touchpoint of nxpy, in one file, version-checked: the PJRT client, its
devices, compiling (each program once per process, and through a persistent cache
across processes), buffers, executing. It imports only nxpy's foundations (telemetry,
cache, watchdog), so any layer can ask it about devices (``nx.Mesh`` does) and the EXLA
compiler builds on it.

jaxlib's PJRT client methods (``compile_and_load``, ``execute_sharded``,
``batched_device_put``) are undocumented, so nxpy supports a tested range of jax/jaxlib
releases (:data:`SUPPORTED`, checked at start-up) and every call that differs between
them is chosen by the running version in one place (:data:`DIFFERENCES`,
:func:`differences`).

Host CPU devices: nxpy asks XLA for ``NXPY_CPU_DEVICES`` host devices (default 8)
before the client starts, so a 2x2 or 2x4 mesh works with no flags.

Platforms: the client is chosen by ``NXPY_PLATFORM`` (or :func:`set_platform`): ``cpu``
(the default), or ``cuda``/``rocm``/``tpu`` when jaxlib's plugin for it is installed.

Several processes: :func:`initialize_distributed` (before the client starts) connects
to PJRT's distributed runtime (the coordination service; gloo collectives on CPU, NCCL
on GPUs); then device *positions* number the GLOBAL devices, in process order, and only
this process's devices (:func:`is_local`) hold buffers here. A lost process raises
:class:`ProcessLostError` in the others (:mod:`nxpy.watchdog`).
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import ipaddress
import itertools
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref

import numpy as np

from . import telemetry, watchdog
from .cache import PROCESS_FACTOR, LockedCache, positive_env, program_cache_size, put_bounded

#: the jax/jaxlib releases nxpy runs with: [lowest, first unsupported)
SUPPORTED = ((0, 10, 2), (0, 13))
DEFAULT_CPU_DEVICES = 8
PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
#: what each platform's collectives run on (for messages and docs; chosen by jaxlib)
COLLECTIVES = {"cpu": "gloo (TCP)", "cuda": "NCCL", "rocm": "RCCL", "tpu": "ICI"}

_lock = threading.Lock()
_state: dict = {}


def _version(text: str) -> tuple:
    """``"0.12.0.1"`` → ``(0, 12, 0, 1)`` (a local or pre-release suffix is dropped)."""
    return tuple(int(p) for p in re.match(r"\d+(?:\.\d+)*", text).group(0).split("."))


def check_versions(jax_version: str, jaxlib_version: str) -> None:
    """Raises ImportError unless jax and jaxlib are the same release within
    :data:`SUPPORTED`.

    >>> check_versions("0.12.0.1", "0.12.0.1")
    >>> check_versions("0.9.2", "0.9.2")
    Traceback (most recent call last):
    ...
    ImportError: nxpy's EXLA compiler needs jax and jaxlib >=0.10.2,<0.13, found jax 0.9.2 and jaxlib 0.9.2: pip install 'jax>=0.10.2,<0.13' 'jaxlib>=0.10.2,<0.13' (the same release of both)
    """
    lo, hi = SUPPORTED
    ok = all(lo <= _version(v) < hi for v in (jax_version, jaxlib_version)) and \
        _version(jax_version)[:3] == _version(jaxlib_version)[:3]
    if not ok:
        spec = f">={'.'.join(map(str, lo))},<{'.'.join(map(str, hi))}"
        raise ImportError(f"nxpy's EXLA compiler needs jax and jaxlib {spec}, found jax "
                          f"{jax_version} and jaxlib {jaxlib_version}: pip install "
                          f"'jax{spec}' 'jaxlib{spec}' (the same release of both)")


def jaxlib_version() -> str:
    """The running jaxlib's version (part of the persistent cache's key)."""
    import jaxlib
    return jaxlib.__version__


def _import():
    import jax
    import jaxlib
    check_versions(jax.__version__, jaxlib.__version__)
    return jax


def requested_cpu_devices() -> int:
    return positive_env("NXPY_CPU_DEVICES", DEFAULT_CPU_DEVICES)


def requested_platform() -> str:
    """The platform the client is (or will be) created for: :func:`set_platform`'s, else
    ``NXPY_PLATFORM``, else ``cpu``."""
    name = _state.get("platform") or os.environ.get("NXPY_PLATFORM") or "cpu"
    name = name.strip().lower()
    if name not in PLATFORMS:
        raise ValueError(f"NXPY_PLATFORM must be one of {', '.join(PLATFORMS)}, got {name!r}")
    return name


def set_platform(name: str) -> None:
    """Chooses the PJRT platform (``cpu``, ``cuda``, ``rocm``, ``tpu``) before the client
    starts."""
    if str(name).strip().lower() not in PLATFORMS:
        raise ValueError(f"NXPY_PLATFORM must be one of {', '.join(PLATFORMS)}, got {name!r}")
    if "client" in _state:
        raise RuntimeError(f"cannot choose the platform {name!r}: nxpy's XLA client already "
                           f"started on {_state['client'].platform!r}; choose it first (or set "
                           f"NXPY_PLATFORM before starting Python)")
    _state["platform"] = name


def started() -> bool:
    """Whether nxpy's XLA client exists (after which platform, device count and the
    distributed runtime are fixed)."""
    return "client" in _state


def _client():
    st = _state
    if "client" in st:
        return st["client"]
    with _lock:
        if "client" in st:
            return st["client"]
        if "dist" not in st and os.environ.get("NXPY_COORDINATOR"):
            kw = distributed_from_env()  # started by nxpy.launch (or the same variables)
            initialize_distributed(kw.pop("coordinator_address"), kw.pop("num_processes", None),
                                   kw.pop("process_id", None), **kw)
        jax = _import()
        name = requested_platform()
        if name == "cpu":
            n = st.get("local_devices") or requested_cpu_devices()
            try:
                jax.config.update("jax_num_cpu_devices", n)
                st["configured"] = True
            except RuntimeError:  # jax created its CPU client before nxpy: keep its devices
                st["configured"] = False
        from jax import core
        from jax.extend import backend as jeb
        from jax.sharding import SingleDeviceSharding
        from jaxlib import _jax, xla_client
        try:
            client = jeb.get_backend(name)
        except RuntimeError as e:
            raise RuntimeError(
                f"nxpy cannot start the {name!r} platform: {e}. Install jaxlib's plugin for "
                f"it (cuda: pip install 'jax[cuda13]=={jax.__version__}'; rocm: the "
                f"jax-rocm plugin; tpu: 'jax[tpu]=={jax.__version__}'), or unset "
                f"NXPY_PLATFORM to use the CPU") from None
        me = client.process_index()
        # global devices in process order (ids 2048*process + i on CPU); positions index this
        devs = sorted(client.devices(), key=lambda d: (d.process_index, d.id))
        st.update(jax=jax, core=core, jeb=jeb, xc=xla_client, J=_jax,
                  SingleDeviceSharding=SingleDeviceSharding,
                  devices=devs, single={}, avals={},
                  local=frozenset(i for i, d in enumerate(devs) if d.process_index == me),
                  copy_in=_jax.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
                  **differences(_jax, _version(jaxlib_version())))
        st["client"] = client
        return client


# --------------------------------------------------------------------------------------
# What differs between the supported jaxlib releases: chosen once, by version, here
# --------------------------------------------------------------------------------------
#: (first jaxlib release with the new behaviour, what changed): one row per difference,
#: each chosen in :func:`differences` and tested in tests/test_versions.py
DIFFERENCES = {
    "result_handler": ((0, 11), "array_result_handler lost its 4th argument, _skip_checks"),
}


def differences(J, version: tuple) -> dict:
    """The version-dependent jaxlib calls nxpy makes, for jaxlib ``version``:
    ``result_handler(aval, sharding)``, the handler that wraps an executable's output
    buffers in committed ``jax.Array``s."""
    if version >= DIFFERENCES["result_handler"][0]:
        def result_handler(aval, sharding):
            return J.array_result_handler(aval, sharding, True)
    else:
        def result_handler(aval, sharding):  # skip the checks: nxpy made the sharding
            return J.array_result_handler(aval, sharding, True, True)
    return {"result_handler": result_handler}


def how_to_get_devices(needed: int) -> str:
    """Advice for a mesh larger than the client, depending on who started XLA."""
    if process_count() > 1:
        return (f"start more processes or give each more devices (nxpy.launch "
                f"--local-devices K, or local_device_count= in nxpy.distributed.initialize)")
    if _state.get("configured", True):
        return (f"on CPU, set NXPY_CPU_DEVICES={needed} (or more) in the environment before "
                f"nxpy starts XLA (the default is {DEFAULT_CPU_DEVICES})")
    return (f"jax created its CPU client before nxpy could configure it, so NXPY_CPU_DEVICES "
            f"had no effect: import nxpy and call nxpy.pjrt.devices() before "
            f"using jax, or set XLA_FLAGS=--xla_force_host_platform_device_count={needed}")


def devices() -> list:
    _client()
    return _state["devices"]


def oracle():
    """The ``jax`` module, for tests that compare with JAX: imported once nxpy's client
    has started, so both share its devices (``nxpy.testing.fuzz`` uses it)."""
    _client()
    return _import()


def device_count() -> int:
    return len(devices())


def platform() -> str:
    return _client().platform


def process_index() -> int:
    """This process's index among the processes of the distributed runtime (0 alone)."""
    return _client().process_index()


def process_count() -> int:
    return _state["dist"]["num_processes"] if "dist" in _state else 1


def process_of(position: int) -> int:
    """The process that owns the device at global position ``position``."""
    return devices()[position].process_index


def is_local(position: int) -> bool:
    """Whether the device at ``position`` belongs to this process (can hold its buffers)."""
    _client()
    return position in _state["local"]


def local_positions() -> list:
    """The positions of this process's devices."""
    _client()
    return sorted(_state["local"])


def default_device() -> int:
    """The device programs and tensors use when none is named: this process's first."""
    _client()
    st = _state
    d = st.get("default")
    if d is None:
        d = st["default"] = min(st["local"])
    return d


def device_kind(position: int = 0) -> str:
    return devices()[position].device_kind


# --------------------------------------------------------------------------------------
# The distributed runtime (several processes, one global device set)
# --------------------------------------------------------------------------------------
class BufferDeletedError(RuntimeError):
    """A device buffer was used after a compiled function took its memory (donation)
    through another tensor that shares it."""


class DistributedError(RuntimeError):
    """The distributed runtime could not start, or lost a process."""


class ProcessLostError(DistributedError):
    """Another process of the distributed program was lost (it died, was killed, raised,
    or exited without :func:`shutdown_distributed`): the collectives it takes part in can
    never complete. ``process`` is its index (-1: the coordination service itself).
    Raised in the main thread by nxpy's watch (see :mod:`nxpy.watchdog`), or by the
    runtime call that failed; with no arguments it takes the watch's message."""

    def __init__(self, *args):
        w = _state.get("watch")
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
    host stops answering (TCP keepalives) may take to be declared lost."""
    if "client" in _state:
        raise RuntimeError(
            "nxpy.distributed.initialize must be called before anything starts the XLA "
            "backend (creating a Mesh, an EXLA tensor, a jit call, nxpy.pjrt.devices(), or "
            "jax itself); call it first in the program")
    if "dist" in _state:
        raise RuntimeError("nxpy.distributed.initialize was already called in this process")
    host, port = _split_address(coordinator_address)
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
        _state["local_devices"] = int(local_device_count)
    bind = f"{host}:{port}" if _loopback(host) else f"0.0.0.0:{port}"
    wait = max(1, int(round(timeout)))
    try:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except Exception:  # pragma: no cover - another jaxlib
        pass
    try:
        hub = _start_runtime(jdist.global_state, f"{host}:{port}", bind, num_processes,
                             process_id, wait, int(heartbeat_timeout))
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
    _state["dist"] = {"address": f"{host}:{port}", "num_processes": num_processes,
                      "process_id": process_id, "timeout_ms": wait * 1000,
                      "kv": jdist.global_state.client, "seq": 0}
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
        _state["watch"] = watchdog.Watch(
            (host.strip("[]"), port), process_id, timeout=wait, keepalive_seconds=heartbeat,
            error=ProcessLostError,
            describe=lambda p, why: _lost_message(p, why, process_id, num_processes))
    except Exception as e:
        raise DistributedError(f"process {process_id} could not join nxpy's watch of the "
                               f"processes at {host}: {_first_line(e)}") from None
    if not _state.get("exit_hooks"):
        _state["exit_hooks"] = True
        atexit.register(_at_exit)  # after jax's own: runs first, before its shutdown
        previous = sys.excepthook

        def excepthook(kind, value, tb):
            w = _state.get("watch")
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
    w = _state.get("watch")
    if w is not None and "dist" in _state:
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


def _spawn_coordinator(bind, num_processes, wait, heartbeat, process_id):
    """On process 0: starts the helper process that runs the coordination service and
    the watch hub, and returns the hub's port. The helper has its own session (the
    launcher's stop and a terminal's Ctrl-C reach it only through the processes it
    serves) and ends when every process has left its hub."""
    if process_id != 0:
        return None
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    code = "import sys; from nxpy import pjrt; pjrt._coordinator_main(sys.argv[1:])"
    helper = subprocess.Popen(
        [sys.executable, "-c", code, bind, str(num_processes), str(wait), str(heartbeat)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env, start_new_session=True)
    _state["helper"] = helper
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
    d = _state.get("dist")
    return None if d is None else {k: d[k] for k in ("address", "num_processes", "process_id")}


def shutdown_distributed() -> None:
    """Leaves the distributed runtime (waits for the other processes to leave too). After
    a process was lost there is no one to wait for: the runtime is left as it is."""
    if "dist" not in _state:
        return
    jax = _state.get("jax") or _import()
    w = _state.get("watch")
    try:
        if w is not None and (w.lost is not None or w.failed):
            _abandon()  # the shutdown barrier would wait for the lost process forever
        else:
            jax.distributed.shutdown()
    finally:
        _state.pop("dist", None)
        if w is not None:
            w.close()
            # kept (its connection open) until the process ends: see Watch.close
            _state.setdefault("left_watches", []).append(_state.pop("watch"))


def _abandon():
    """Forgets the runtime client without its shutdown barrier (kept referenced: it was
    made with shutdown_on_destruction=False, and is never destroyed mid-exit)."""
    from jax._src import distributed as jdist
    gs = jdist.global_state
    _state.setdefault("abandoned", []).extend([gs.client, gs.service])
    gs.client = gs.service = None


def _lost_error():
    """The :class:`ProcessLostError` to raise when the watch knows that a process was
    lost, else None."""
    w = _state.get("watch")
    return ProcessLostError() if w is not None and w.lost is not None else None


#: what a runtime error says when a collective across processes failed on its transport
_TRANSPORT = re.compile(r"gloo|nccl|connection|peer|socket", re.I)


#: what host callbacks raised, by the number their failure's text carries, until the
#: failure reaches the caller (bounded: a sharded run may fail on every device)
_CALLBACK_ERRORS: dict = {}
_callback_error_numbers = itertools.count()
_CALLBACK_ERROR = re.compile(r"nxpy host callback error (\d+):")


def _raise_runtime_failure(e, what):
    """Called while handling ``e``, the failure of a runtime call (``what``): raises the
    exception a host callback raised when that failed the run (a user's ``hook`` or
    ``runtime_call`` function: the user's own error, not XLA's text); in a distributed
    program, :class:`ProcessLostError` when a process was lost (a collective's failure
    comes a moment before the watch hears of it: it waits a few seconds for it) or a
    :class:`DistributedError` for another failure of the collectives' transport; else
    re-raises ``e``."""
    m = _CALLBACK_ERROR.search(str(e))
    if m is not None:
        raised = _CALLBACK_ERRORS.pop(int(m.group(1)), None)
        if raised is not None:
            raise raised from None
    if "has been deleted" in str(e):
        raise BufferDeletedError(
            f"{what} needs a device buffer whose memory was given to a compiled function "
            f"(donated) through another tensor sharing it: a tensor resharded from this one "
            f"(nx.device_put reuses the blocks that stay on their devices), or one of its "
            f"addressable_shards. Copy before donating (nx.device_put(t, "
            f"t.sharding, ...) of a copy, or jit without donate_argnums)") from None
    w = _state.get("watch")
    if w is None or isinstance(e, DistributedError):
        raise  # noqa: PLE0704 - e, the exception being handled
    transport = bool(_TRANSPORT.search(str(e)))
    if w.wait_lost(5.0 if transport else 0.0):
        raise ProcessLostError() from None
    if transport:
        raise DistributedError(
            f"process {process_index()}: {what} failed in the collectives between "
            f"processes ({_first_line(e)}), and no process is known to be lost: check the "
            f"network between the hosts and the other processes' output") from None
    raise  # noqa: PLE0704


raise_runtime_failure = _raise_runtime_failure  # for the callers' own hot paths


@contextlib.contextmanager
def _compiling(module_text):
    """Times an XLA compile of ``module_text`` and reports XLA's failure as
    :class:`CompileError` with the module (a :class:`ProcessLostError` the watch raises
    in this thread meanwhile is not XLA's: it goes through)."""
    try:
        with telemetry.timed("compile", key=hash(module_text)):
            yield
    except ProcessLostError:
        raise
    except Exception as e:  # noqa: BLE001 - XLA's own error text, with the module
        raise CompileError(f"XLA could not compile the module nxpy emitted: {e}\n\n"
                           f"{module_text}") from None


def allgather_bytes(payload: bytes) -> list:
    """Every process's ``payload``, in process order, through the coordination service's
    key-value store (for small host-side exchanges; every process must call it the same
    number of times, in the same order, as for any collective)."""
    d = _state.get("dist")
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


# --------------------------------------------------------------------------------------
# Compile
# --------------------------------------------------------------------------------------
class CompileError(RuntimeError):
    """XLA rejected a module nxpy emitted (a bug in nxpy or a plugin's lowering)."""


#: executables by (module text, devices, SPMD): each program compiles once per process
_EXECUTABLES = LockedCache(PROCESS_FACTOR * program_cache_size())


def lapack_ready() -> None:
    """Makes the LAPACK custom-call targets jaxlib ships for CPU (``lapack_spotrf_ffi``,
    ...) runnable: importing jax registers them with XLA's CPU FFI registry
    (``jax._src.lax.linalg.register_module_custom_calls(jaxlib.lapack)``), but their
    LAPACK function pointers are only bound by ``jaxlib.cpu._lapack.initialize()`` (from
    scipy's ``cython_lapack``), which JAX calls when it first lowers a linalg op. Running a
    module that calls them before that crashes the process (a null function pointer), so
    :func:`compile` calls this for every module that names a ``lapack_`` target."""
    if _state.get("lapack"):
        return
    _client()
    from jax._src.lax import linalg as _jax_linalg  # noqa: F401 - registers the FFI targets
    from jaxlib import lapack
    lapack._lapack.initialize()
    _state["lapack"] = True


def compile(module_text: str, device_ids, *, spmd: bool = False):
    """The executable of MLIR text for the given device positions (one per partition):
    compiled once per process (concurrent callers wait for the one compile), and loaded
    from the persistent cache when one is set (:func:`set_cache_dir`)."""
    key = (module_text, tuple(int(d) for d in device_ids), bool(spmd))
    own = getattr(module_text, "executables", None)
    if own is not None:  # a program with callbacks: the text holds its executables
        return own.get(key[1:], lambda: _callback_executable(module_text, key))
    return _EXECUTABLES.get(key, lambda: _compile_or_load(module_text, key[1], spmd))


def memory_stats(executable) -> dict:
    """The device memory a compiled executable reserves, from XLA's buffer assignment
    (``LoadedExecutable.get_compiled_memory_stats``), in bytes: ``argument``, ``output``,
    ``alias`` (outputs written in place of donated arguments), ``temp`` (everything the
    program allocates while it runs, loop carries included) and ``generated_code``.

    >>> import nxpy as nx
    >>> from nxpy.defn import compile
    >>> f = compile(lambda x: x * 2, nx.template((1000,), "f32"), compiler="exla")
    >>> memory_stats(f._run.executable)["argument"]
    4000
    """
    m = executable.get_compiled_memory_stats()
    return {"argument": int(m.argument_size_in_bytes), "output": int(m.output_size_in_bytes),
            "alias": int(m.alias_size_in_bytes), "temp": int(m.temp_size_in_bytes),
            "generated_code": int(m.generated_code_size_in_bytes)}


#: executables of programs with host callbacks, held by the texts that lowered them
#: (CallbackModule.executables) and found here by equal texts (equal print_values)
_CALLBACK_EXECUTABLES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_callback_executables_lock = threading.Lock()


def _callback_executable(module_text, key):
    key = (str(module_text),) + key[1:]  # a plain copy: the text holds its executable
    with _callback_executables_lock:
        exe = _CALLBACK_EXECUTABLES.get(key)
    if exe is None:
        exe = _compile_or_load(module_text, key[1], key[2])
        with _callback_executables_lock:
            exe = _CALLBACK_EXECUTABLES.setdefault(key, exe)
    return exe


def _compile_or_load(module_text, device_ids, spmd):
    client = _client()
    st = _state
    if "lapack_" in module_text and not st.get("lapack"):
        lapack_ready()
    devs = [st["devices"][i] for i in device_ids]
    n = len(devs)
    opts = st["jeb"].get_compile_options(num_replicas=1, num_partitions=n,
                                         device_assignment=np.array(devs).reshape(1, n))
    if spmd:
        opts.executable_build_options.use_spmd_partitioning = True
        opts.executable_build_options.use_shardy_partitioner = True
    device_list = st["xc"].DeviceList(tuple(devs))
    if _HOST_CALLBACK_MARK in module_text:
        return _compile_with_host_callbacks(client, module_text, device_list, opts, device_ids)
    disk = _disk_cache()
    if disk is not None:
        digest = _digest(module_text, opts, devs)
        payload = disk.load(digest)
        if payload is not None:
            try:
                exe = client.deserialize_executable(payload, device_list, opts)
            except ProcessLostError:
                raise
            except Exception as e:  # an entry of another jaxlib, or damaged past the checks
                warnings.warn(f"nxpy: the cached executable {digest[:16]}... in {disk.root} "
                              f"could not be loaded ({type(e).__name__}: {e}); compiling it "
                              f"again", RuntimeWarning, stacklevel=2)
            else:
                telemetry.event("disk_hit", key=digest)
                return exe
        telemetry.event("disk_miss", key=digest)
    with _compiling(module_text):
        exe = client.compile_and_load(module_text, device_list, opts)
    if disk is not None:
        disk.store(digest, client.serialize_executable(exe))
    return exe


# ----------------------------------------------------------------------------------------
# Host callbacks (print_value, hook, runtime_call)
# ----------------------------------------------------------------------------------------
#: jaxlib's typed-FFI handlers that call a Python function given at compile time
_CALLBACK_TARGETS = {"cpu": "xla_ffi_python_cpu_callback", "cuda": "xla_ffi_python_gpu_callback",
                     "rocm": "xla_ffi_python_gpu_callback"}
_HOST_CALLBACK_MARK = "xla_ffi_python_"  # both targets start so


class HostCallback:
    """A registered host callback: ``call(device_position, *arrays)`` returning None or the
    result arrays (exactly the custom call's result shapes and dtypes), named in modules by
    ``key`` (a number never given to another callback in this process). It stays
    registered while this object is alive; the module texts that name it
    (:class:`CallbackModule`) and the executables compiled from them hold it, so it goes
    with the last program that could call it (and so does whatever ``call`` holds)."""

    __slots__ = ("key", "call", "__weakref__")

    def __init__(self, key: int, call):
        self.key, self.call = key, call

    def __repr__(self):
        return f"<host callback {self.key}>"


class CallbackModule(str):
    """Module text that calls host callbacks, holding them (``callbacks``): whoever keeps
    the text (a graph's lowering cache, a compiled program's ``module``) keeps its
    callbacks registered, so compiling it again always finds them. Its executables are
    cached on the text itself (``executables``), not in the process-wide cache: no other
    program names these callbacks, so the executables (and what the callbacks hold) go
    with the text, when the function that lowered it and its programs are dropped. A
    copy (``str(text)``, a slice) names the same keys but holds nothing.

    >>> cb = host_callback(("doc", 1), lambda device, x: None)
    >>> text = CallbackModule("module {}", [cb, cb])
    >>> text == "module {}", text.callbacks == (cb,), type(str(text)) is str
    (True, True, True)
    """

    def __new__(cls, text: str, callbacks):
        self = super().__new__(cls, text)
        self.callbacks = tuple({cb.key: cb for cb in callbacks}.values())
        self.executables = LockedCache(PROCESS_FACTOR * program_cache_size())
        return self


def module_text(text: str, callbacks) -> str:
    """``text`` as it goes to :func:`compile`: a :class:`CallbackModule` holding
    ``callbacks`` (the :class:`HostCallback` objects the module names), or ``text`` itself
    when there are none."""
    return CallbackModule(text, callbacks) if callbacks else text


# registered callbacks, while alive (held by the texts and executables that use them)
_callbacks: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # key → HostCallback
_callback_keys: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # identity → same
_next_callback_key = itertools.count(1)  # never reused: a stale text cannot call another's
_callback_lock = threading.Lock()


def host_callback_target(platform: str | None = None) -> str:
    """The custom-call target of a host callback on ``platform`` (default: this
    process's): jaxlib's ``xla_ffi_python_{cpu,gpu}_callback`` (what
    ``jax.debug.callback`` lowers to). Its operands, as nxpy emits them: a token, the
    callback's key (``ui64``), the partition id (``ui32``) and the values; its results: a
    token, then the callback's values.

    >>> host_callback_target("cuda")
    'xla_ffi_python_gpu_callback'
    """
    name = platform or requested_platform()
    if name not in _CALLBACK_TARGETS:
        raise NotImplementedError(f"host callbacks (print_value, hook, runtime_call) inside compiled "
                                  f"programs are not supported on the {name!r} platform by "
                                  f"nxpy (jaxlib implements them there with send/recv "
                                  f"channels); use the Evaluator")
    return _CALLBACK_TARGETS[name]


def host_callback(identity, call) -> HostCallback:
    """The registration of host callback ``call(device_position, *arrays)``; a module names
    it by its ``key``. While a registration of an equal ``identity`` (hashable) is alive it
    is returned again, so equal programs lower to equal text and compile once. Keep it
    with the module text (:func:`module_text`): it is registered only while held."""
    with _callback_lock:
        cb = _callback_keys.get(identity)
        if cb is None:
            cb = HostCallback(next(_next_callback_key), call)
            _callback_keys[identity] = cb
            _callbacks[cb.key] = cb
        return cb


def _compile_with_host_callbacks(client, module_text, device_list, opts, device_ids):
    """Compiles a module calling host callbacks. jaxlib takes the Python callables only
    with an MLIR module object (not text): the custom calls' ``index = 0`` names the
    single dispatcher passed here, which finds the callback by the key operand and the
    device by the partition id. The dispatcher holds the callbacks ``module_text`` holds
    (:class:`CallbackModule`), and jaxlib holds the dispatcher as long as the executable:
    they stay registered while it can run. Never stored in the persistent cache (the
    callbacks are objects of this process)."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir
    positions = list(device_ids)
    held = {cb.key: cb for cb in getattr(module_text, "callbacks", ())}

    def dispatch(token, key, partition, *arrays):
        key = int(key)
        cb = held.get(key) or _callbacks.get(key)  # the latter: a copy of a module's text
        if cb is None:
            raise RuntimeError(
                f"nxpy: host callback {key} (print_value/hook/runtime_call) is no longer "
                f"registered: "
                f"this executable was compiled from a copy of a module's text after every "
                f"program and text holding its callbacks was dropped; compile the function "
                f"again (or keep the text nxpy lowered)")
        try:  # copies: the buffers belong to XLA and are reused once the callback returns
            results = cb.call(positions[int(partition)],
                              *[np.array(a, copy=True) for a in arrays])
        except Exception as e:  # XLA fails the execution with this text; the caller's
            n = next(_callback_error_numbers)  # thread raises e itself (_raise_runtime_failure)
            put_bounded(_CALLBACK_ERRORS, n, e, 64)
            raise RuntimeError(f"nxpy host callback error {n}: a host callback (print_value/"
                               f"hook/runtime_call) raised {type(e).__name__}: {e}") from e
        return (token, *(results or ()))

    with _compiling(module_text), jax_mlir.make_ir_context():
        exe = client.compile_and_load(ir.Module.parse(module_text), device_list, opts,
                                      [dispatch])
    return SynchronousExecutable(exe)


class SynchronousExecutable:
    """An executable with host callbacks: :meth:`execute_sharded` returns once every
    device's run (and so every callback) is done, so what they print comes before the
    call returns (it waits on the runtime token, as JAX waits for effects). Everything
    else is the jaxlib executable's. Its type is the flag :func:`is_synchronous` reads:
    it goes with the object (a set of ``id()`` would pass it on to whichever executable
    next takes a freed one's address)."""

    __slots__ = ("executable", "__weakref__")

    def __init__(self, executable):
        self.executable = executable

    def execute_sharded(self, buffers):
        results = self.executable.execute_sharded(buffers, with_tokens=True)
        results.consume_token().block_until_ready()
        return results

    def __getattr__(self, name):
        return getattr(self.executable, name)


def _execute(exe, buffers):
    """``exe.execute_sharded(buffers)`` (a :class:`SynchronousExecutable` waits for its
    callbacks), a runtime failure raised as :func:`_raise_runtime_failure` says."""
    try:
        return exe.execute_sharded(buffers)
    except Exception as e:
        _raise_runtime_failure(e, "a program")


# ----------------------------------------------------------------------------------------
# The persistent executable cache
# ----------------------------------------------------------------------------------------
DEFAULT_CACHE_MAX_BYTES = 2 << 30
_MAGIC = b"NXPYEXE1"


def set_cache_dir(path) -> None:
    """Stores compiled executables under ``path`` (None: no persistent cache) and loads
    them from there, across processes. Also read from ``NXPY_CACHE_DIR``. Only point it
    at a directory you trust: loading an executable runs its code."""
    _state["cache_dir"] = None if path is None else os.fspath(path)
    _state.pop("disk", None)


def cache_dir():
    """The persistent cache's directory, or None."""
    if "cache_dir" in _state:
        return _state["cache_dir"]
    return os.environ.get("NXPY_CACHE_DIR") or None


def _disk_cache():
    root = cache_dir()
    if root is None:
        return None
    d = _state.get("disk")
    if d is None or d.root != root:
        d = _state["disk"] = _DiskCache(root, _max_bytes())
    return d


def _max_bytes() -> int:
    return positive_env("NXPY_CACHE_MAX_BYTES", DEFAULT_CACHE_MAX_BYTES)


def _digest(module_text, opts, devs) -> str:
    """What an executable depends on: the module, the compile options (device assignment
    included), the devices' kind and the jaxlib version."""
    h = hashlib.sha256()
    for part in (module_text.encode(), opts.SerializeAsString(),
                 f"{platform()}|{devs[0].device_kind}|{len(devs)}|{device_count()}|"
                 f"{jaxlib_version()}".encode()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


class _DiskCache:
    """Files ``<digest>.exe``: a magic header, the SHA-256 of the payload, the payload.
    Written to a temporary file and renamed (safe with concurrent processes); a damaged
    entry is reported and replaced; the least recently used entries go when the
    directory exceeds ``max_bytes``."""

    def __init__(self, root, max_bytes):
        self.root, self.max_bytes = root, max_bytes
        os.makedirs(root, exist_ok=True)

    def _path(self, digest):
        return os.path.join(self.root, digest + ".exe")

    def load(self, digest):
        path = self._path(digest)
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            warnings.warn(f"nxpy: cannot read the cached executable {path}: {e}", RuntimeWarning,
                          stacklevel=3)
            return None
        head = len(_MAGIC) + 32
        payload = blob[head:]
        if (len(blob) < head or blob[:len(_MAGIC)] != _MAGIC
                or hashlib.sha256(payload).digest() != blob[len(_MAGIC):head]):
            warnings.warn(f"nxpy: the cached executable {path} is truncated or damaged; "
                          f"compiling it again", RuntimeWarning, stacklevel=3)
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:
            pass
        return payload

    def store(self, digest, payload):
        path = self._path(digest)
        try:
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".exe")
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except OSError as e:
            warnings.warn(f"nxpy: cannot write the executable cache in {self.root}: {e}",
                          RuntimeWarning, stacklevel=3)
            return
        self._evict()

    def _evict(self):
        entries = []
        for name in os.listdir(self.root):
            if name.endswith(".exe") and not name.startswith(".tmp-"):
                try:
                    st = os.stat(os.path.join(self.root, name))
                except OSError:
                    continue
                entries.append((st.st_mtime, st.st_size, name))
        total = sum(size for _, size, _ in entries)
        for _, size, name in sorted(entries):
            if total <= self.max_bytes:
                break
            try:
                os.remove(os.path.join(self.root, name))
                total -= size
            except OSError:
                pass


def hlo_text(exe) -> str:
    return exe.get_hlo_text()


# --------------------------------------------------------------------------------------
# Buffers
# --------------------------------------------------------------------------------------
def _single(device_index: int):
    s = _state["single"].get(device_index)
    if s is None:
        s = _state["single"][device_index] = _state["SingleDeviceSharding"](
            _state["devices"][device_index])
    return s


def to_device(array: np.ndarray, device_index: int = 0):
    """A single-device buffer holding ``array`` (64-bit types kept as they are)."""
    st = _state
    if "avals" not in st:
        _client()
    if device_index not in st["local"]:
        raise ValueError(f"device {device_index} belongs to process "
                         f"{process_of(device_index)}, not to this process "
                         f"({process_index()}): it cannot hold a buffer here (this process's "
                         f"devices: {local_positions()})")
    if type(array) is not np.ndarray or not array.flags.c_contiguous:
        array = np.ascontiguousarray(array).reshape(np.shape(array))  # keeps 0-d arrays 0-d
    key = (array.shape, array.dtype)
    aval = st["avals"].get(key)
    if aval is None:
        aval = st["avals"][key] = st["core"].ShapedArray(array.shape, array.dtype)
    # copied during the call: the buffer never aliases the array (a donated buffer may be
    # overwritten by its program's results, and host tensors share arrays with views)
    telemetry.count("transfer_to_device")
    return st["J"].batched_device_put(aval, _single(device_index), [array],
                                      [st["devices"][device_index]], True, False,
                                      st["copy_in"], True)


def put_sharded(arrays, global_shape, dtype, mesh_devices, mesh_shape, axis_names, spec,
                partitions):
    """One global array over a mesh from host arrays: ``arrays[i]`` is the shard of
    partition ``partitions[i]`` (this process's partitions, in order; views are fine),
    laid out by partition ``spec``. The arrays are copied; the call returns when the
    copies are made (so the caller may change its arrays afterwards)."""
    st = _state
    if "avals" not in st:
        _client()
    sharding = _named_sharding(mesh_devices, mesh_shape, axis_names, spec)
    aval = st["core"].ShapedArray(tuple(global_shape), np.dtype(dtype))
    devs = [st["devices"][mesh_devices[p]] for p in partitions]
    telemetry.count("transfer_to_device", len(arrays))
    # jaxlib 0.10.2 fails ("bad_function_call") putting several contiguous views with the
    # copy-during-call semantics to_device uses; JAX's own (zero-copy, asynchronous)
    # semantics copy on the CPU, so wait for the copies instead
    out = st["J"].batched_device_put(aval, sharding, list(arrays), devs, True, False,
                                     st["J"].HostBufferSemantics.ZERO_COPY, True)
    block_until_ready([out])
    return out


def array_type():
    """The type of the single-device buffers :func:`to_device` and executables return."""
    _client()
    return _state["J"].ArrayImpl


def to_host(buffer, buffers: int = 1) -> np.ndarray:
    """The values of a buffer (or of a global array whose distinct shards are
    ``buffers`` buffers) on the host."""
    telemetry.count("transfer_to_host", buffers)
    try:
        return np.asarray(buffer)
    except Exception as e:  # a program's failure shows when its results are read
        _raise_runtime_failure(e, "reading a result")


def device_index_of(buffer) -> int:
    return _state["devices"].index(next(iter(buffer.devices())))


def result_handlers(outputs, device_index: int) -> list:
    """C++ builders of the result arrays of a single-partition program whose outputs are
    ``[(shape, dtype), ...]`` on device ``device_index``, for ``consume_with_handlers``
    (JAX's path; ~1.5 µs a call cheaper than disassembling)."""
    st = _state
    make = st["result_handler"]
    return [make(st["core"].ShapedArray(tuple(shape), np.dtype(dt)), _single(device_index))
            for shape, dt in outputs]


def is_synchronous(exe) -> bool:
    """Whether ``exe`` has host callbacks (its calls go through :func:`executor`, which
    waits for them); without, ``exe.execute_sharded(buffers).consume_with_handlers(
    result_handlers(...))`` is the whole of a call."""
    return type(exe) is SynchronousExecutable


def executor(exe, outputs, device_index: int):
    """``run(buffers) -> [buffer per output]`` for a single-partition executable whose
    outputs are ``[(shape, dtype), ...]``; the result arrays are built by
    :func:`result_handlers` (``run.handlers``: a caller may call
    ``exe.execute_sharded(buffers).consume_with_handlers(run.handlers)`` itself, one frame
    less, when ``exe`` is not :func:`is_synchronous`)."""
    handlers = result_handlers(outputs, device_index)
    if not is_synchronous(exe):  # one device, no collectives: nothing for _execute to convert
        execute = exe.execute_sharded

        def run(buffers):
            return execute(buffers).consume_with_handlers(handlers)
    else:
        def run(buffers):
            return _execute(exe, buffers).consume_with_handlers(handlers)
    run.handlers = handlers
    return run


#: dtypes JAX's C++ dispatch would narrow when its x64 mode is off (nxpy keeps them)
_WIDE = {np.dtype(d) for d in (np.int64, np.uint64, np.float64, np.complex128)}


def dispatcher(exe, inputs, outputs, device_index: int):
    """JAX's own C++ dispatch (the one ``jax.jit`` calls go through) around a
    single-partition executable: ``call(*datas) -> [buffer per output]`` where each data is
    a buffer on the device or a NumPy array of the input's dtype (copied in by C++).
    ``inputs``/``outputs``: ``[(shape, dtype), ...]``. The first call with a new kind of
    arguments runs :func:`executor`'s path and teaches the C++ side. None when the program
    has 64-bit inputs (JAX's dispatch narrows them unless its x64 mode is on) or host
    callbacks (its calls wait for them), or this jaxlib lacks the pieces."""
    st = _state
    if any(np.dtype(dt) in _WIDE for _, dt in inputs) or is_synchronous(exe):
        return None
    try:
        from jax._src import tree_util
        from jax._src.interpreters import pxla
        make, fastpath = st["J"].pjit, pxla.MeshExecutableFastpathData
        keys, registry, shard_arg = (pxla.JitGlobalCppCacheKeys(), tree_util.dispatch_registry,
                                     pxla.cc_shard_arg)
        out_tree = tree_util.tree_structure([0] * len(outputs))
    except (ImportError, AttributeError):  # pragma: no cover - another jaxlib
        return None
    execute = executor(exe, outputs, device_index)
    single = _single(device_index)
    array = st["J"].ArrayImpl
    core = st["core"]
    n = len(inputs)
    data = fastpath(exe, out_tree, [single] * n, [single] * len(outputs),
                    [core.ShapedArray(tuple(s), np.dtype(d)) for s, d in outputs],
                    [True] * len(outputs), [True] * n, [None] * n, [])

    def cache_miss(*datas):
        ours = all(type(d) is np.ndarray or (type(d) is array and d.sharding == single)
                   for d in datas)
        outs = execute([d if type(d) is array else to_device(d, device_index) for d in datas])
        return outs, (data if ours else None), False

    cpp = make("nxpy", None, cache_miss, [], [], keys, registry, shard_arg)
    return cpp


def _named_sharding(mesh_devices, mesh_shape, axis_names, spec):
    key = (tuple(mesh_devices), tuple(mesh_shape), tuple(axis_names), spec)
    cache = _state.setdefault("named", {})
    s = cache.get(key)
    if s is None:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        devs = np.empty(len(mesh_devices), dtype=object)
        devs[:] = [_state["devices"][i] for i in mesh_devices]
        mesh = Mesh(devs.reshape(mesh_shape), tuple(axis_names))
        s = cache[key] = NamedSharding(mesh, PartitionSpec(*spec))
    return s


def assembler(global_shape, dtype, mesh_devices, mesh_shape, axis_names, spec, *,
              reuse=True):
    """``assemble`` with everything but the shards fixed: a function from a list of
    per-partition single-device buffers (partition order) to one global array. The
    abstract value and the sharding are built once, and the last global array is kept
    while all of its shards are alive: called again with the very same buffers (the
    same inputs to a compiled program), it is returned as it is, as JAX reuses a global
    array it is given. A dead shard drops it at once (weak references), so it never
    holds device memory its shards' owners have let go. ``reuse=False``: no reuse."""
    st = _state
    aval = st["core"].ShapedArray(tuple(global_shape), np.dtype(dtype))
    sharding = _named_sharding(mesh_devices, mesh_shape, axis_names, spec)
    array_impl = st["J"].ArrayImpl
    last = [None]  # [(weak references to the shards, their global array)] or [None]

    def forget(dead):
        entry = last[0]
        if entry is not None and any(r is dead for r in entry[0]):
            last[0] = None

    def assemble_shards(shards: list):
        entry = last[0]
        if entry is not None:
            refs, array = entry
            if len(refs) == len(shards):
                for r, s in zip(refs, shards):
                    if r() is not s:
                        break
                else:
                    return array
        array = array_impl(aval, sharding, shards, True, True)
        if not reuse:
            return array
        try:
            last[0] = ([weakref.ref(s, forget) for s in shards], array)
        except TypeError:  # a buffer type without weak references: no reuse
            last[0] = None
        return array
    assemble_shards.sharding = sharding  # cached per mesh and spec: compare by identity
    return assemble_shards


def assemble(global_shape, dtype, shards, mesh_devices, mesh_shape, axis_names, spec):
    """One global array from per-partition single-device buffers (partition order)."""
    return assembler(global_shape, dtype, mesh_devices, mesh_shape, axis_names, spec,
                     reuse=False)(list(shards))


def sharded_executor(exe, outputs, mesh_devices, mesh_shape, axis_names):
    """``run(global arrays) -> [global array per output]`` for an SPMD executable whose
    outputs are ``[(global shape, dtype, partition spec), ...]``; see :func:`executor`."""
    st = _state
    shardings = [_named_sharding(mesh_devices, mesh_shape, axis_names, spec)
                 for _, _, spec in outputs]
    make = st["result_handler"]
    handlers = [make(st["core"].ShapedArray(tuple(shape), np.dtype(dt)), sh)
                for (shape, dt, _), sh in zip(outputs, shardings)]

    def run(arrays):
        return _execute(exe, arrays).consume_with_handlers(handlers)
    run.shardings = shardings  # the results' sharding objects, comparable by identity
    run.handlers = handlers
    # no host callbacks to wait for: a caller's hot path may call PJRT itself
    run.raw = None if is_synchronous(exe) else exe.execute_sharded
    return run


def shards_of(array) -> list:
    """A global array's per-partition single-device buffers (this process's), in
    partition order (the order its executable's device assignment gave them)."""
    return array._arrays


def move_blocks(global_shape, dtype, mesh_devices, mesh_shape, axis_names, spec, shards,
                partitions):
    """One global array laid out by ``spec`` from existing single-device buffers:
    ``shards[i]`` holds partition ``partitions[i]``'s block, on its device already (then
    it is reused as it is) or on another (then it is copied there, device to device)."""
    st = _state
    aval = st["core"].ShapedArray(tuple(global_shape), np.dtype(dtype))
    sharding = _named_sharding(mesh_devices, mesh_shape, axis_names, spec)
    devs = [st["devices"][mesh_devices[p]] for p in partitions]
    try:
        return st["J"].batched_device_put(aval, sharding, list(shards), devs, True, False,
                                          st["J"].HostBufferSemantics.ZERO_COPY, True)
    except Exception as e:
        _raise_runtime_failure(e, "resharding")


def global_array(global_shape, dtype, mesh_devices, mesh_shape, axis_names, spec, shards):
    """One global array from this process's per-partition buffers (partition order), with
    no copy (they must already be on their partitions' devices)."""
    st = _state
    aval = st["core"].ShapedArray(tuple(global_shape), np.dtype(dtype))
    return st["J"].ArrayImpl(aval, _named_sharding(mesh_devices, mesh_shape, axis_names, spec),
                             list(shards), True, True)


def sharding_object(mesh_devices, mesh_shape, axis_names, spec):
    """The jax sharding of arrays laid out by ``spec`` over the mesh (one object per
    mesh and spec: compare by identity)."""
    return _named_sharding(mesh_devices, mesh_shape, axis_names, spec)


def sharding_of(array):
    """The jax sharding object of a global array."""
    return array.sharding


def block_until_ready(buffers) -> None:
    """Waits until every buffer (single-device or global) is computed."""
    st = _state
    if buffers:
        try:
            st["xc"].batched_block_until_ready(list(buffers))
        except Exception as e:
            _raise_runtime_failure(e, "waiting for results")
