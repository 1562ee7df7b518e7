"""The bottom of :mod:`nxpy.pjrt`: the jax/jaxlib import and its version checks
(:data:`SUPPORTED`), what differs between the supported jaxlib releases
(:data:`DIFFERENCES`, :func:`differences`), and ``_state``, the package's one dict of
process-wide state (the client and its devices, the distributed runtime, the persistent
cache's directory, ...): the other modules reach it as ``lib._state``."""
from __future__ import annotations

import re

#: the jax/jaxlib releases nxpy runs with: [lowest, first unsupported)
SUPPORTED = ((0, 10, 2), (0, 12, 1))

#: the package's process-wide state, in one dict (the client, its devices, the distributed
#: runtime, the persistent cache's directory, ...): every module reaches it as lib._state
_state: dict = {}


def _version(text: str) -> tuple:
    """``"0.12.0.1"`` → ``(0, 12, 0, 1)`` (a local or pre-release suffix is dropped)."""
    return tuple(int(p) for p in re.match(r"\d+(?:\.\d+)*", text).group(0).split("."))


def check_versions(jax_version: str, jaxlib_version: str) -> None:
    """Raises ImportError unless jax and jaxlib are the same release within
    :data:`SUPPORTED`.

    >>> check_versions("0.12.0.1", "0.12.0.1")
    >>> check_versions("0.9.2", "0.9.2")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ImportError: nxpy's EXLA compiler needs jax and jaxlib >=0.10.2,<0.12.1, found jax
    0.9.2 and jaxlib 0.9.2: pip install 'jax>=0.10.2,<0.12.1' 'jaxlib>=0.10.2,<0.12.1' (the
    same release of both)
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
