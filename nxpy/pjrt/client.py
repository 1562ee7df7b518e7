"""The PJRT client and its devices: the platform (``NXPY_PLATFORM``,
:func:`set_platform`), the host CPU device count (``NXPY_CPU_DEVICES``), the global
device positions and which of them belong to this process."""
from __future__ import annotations

import os
import threading

from ..cache import positive_env
from . import lib
from .distributed import distributed_from_env, initialize_distributed
from .lib import _import, _version, differences


DEFAULT_CPU_DEVICES = 8
PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
#: what each platform's collectives run on (for messages and docs; chosen by jaxlib)
COLLECTIVES = {"cpu": "gloo (TCP)", "cuda": "NCCL", "rocm": "RCCL", "tpu": "ICI"}

_lock = threading.Lock()


def requested_cpu_devices() -> int:
    return positive_env("NXPY_CPU_DEVICES", DEFAULT_CPU_DEVICES)


def requested_platform() -> str:
    """The platform the client is (or will be) created for: :func:`set_platform`'s, else
    ``NXPY_PLATFORM``, else ``cpu``."""
    name = lib._state.get("platform") or os.environ.get("NXPY_PLATFORM") or "cpu"
    name = name.strip().lower()
    if name not in PLATFORMS:
        raise ValueError(f"NXPY_PLATFORM must be one of {', '.join(PLATFORMS)}, got {name!r}")
    return name


def set_platform(name: str) -> None:
    """Chooses the PJRT platform (``cpu``, ``cuda``, ``rocm``, ``tpu``) before the client
    starts."""
    if str(name).strip().lower() not in PLATFORMS:
        raise ValueError(f"NXPY_PLATFORM must be one of {', '.join(PLATFORMS)}, got {name!r}")
    if "client" in lib._state:
        raise RuntimeError(f"cannot choose the platform {name!r}: nxpy's XLA client already "
                           f"started on {lib._state['client'].platform!r}; choose it first (or set "
                           f"NXPY_PLATFORM before starting Python)")
    lib._state["platform"] = name


def started() -> bool:
    """Whether nxpy's XLA client exists (after which platform, device count and the
    distributed runtime are fixed)."""
    return "client" in lib._state


def _client():
    st = lib._state
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
                  **differences(_jax, _version(lib.jaxlib_version())))
        st["client"] = client
        return client


def how_to_get_devices(needed: int) -> str:
    """Advice for a mesh larger than the client, depending on who started XLA."""
    if process_count() > 1:
        return ("start more processes or give each more devices (nxpy.launch "
                "--local-devices K, or local_device_count= in nxpy.distributed.initialize)")
    if lib._state.get("configured", True):
        return (f"on CPU, set NXPY_CPU_DEVICES={needed} (or more) in the environment before "
                f"nxpy starts XLA (the default is {DEFAULT_CPU_DEVICES})")
    return (f"jax created its CPU client before nxpy could configure it, so NXPY_CPU_DEVICES "
            f"had no effect: import nxpy and call nxpy.pjrt.devices() before "
            f"using jax, or set XLA_FLAGS=--xla_force_host_platform_device_count={needed}")


def devices() -> list:
    _client()
    return lib._state["devices"]


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
    return lib._state["dist"]["num_processes"] if "dist" in lib._state else 1


def process_of(position: int) -> int:
    """The process that owns the device at global position ``position``."""
    return devices()[position].process_index


def position_of(device) -> int:
    """The position of ``device`` (one of :func:`devices`, a jaxlib device: what
    ``jax.devices()`` lists too) among the client's devices."""
    devs = devices()
    for i, d in enumerate(devs):
        if d is device or d == device:
            return i
    raise ValueError(f"{device!r} is not a device of the {platform()} client (its devices "
                     f"are {list(devs)})")


def is_local(position: int) -> bool:
    """Whether the device at ``position`` belongs to this process (can hold its buffers)."""
    _client()
    return position in lib._state["local"]


def local_positions() -> list:
    """The positions of this process's devices."""
    _client()
    return sorted(lib._state["local"])


def default_device() -> int:
    """The device programs and tensors use when none is named: this process's first."""
    _client()
    st = lib._state
    d = st.get("default")
    if d is None:
        d = st["default"] = min(st["local"])
    return d


def device_kind(position: int = 0) -> str:
    return devices()[position].device_kind
