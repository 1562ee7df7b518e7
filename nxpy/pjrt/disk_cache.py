"""The persistent executable cache (:func:`set_cache_dir`, ``NXPY_CACHE_DIR``): compiled
executables stored on disk, keyed by module, compile options, devices and jaxlib
version, shared across processes."""
from __future__ import annotations

import hashlib
import os
import tempfile
import warnings

from ..cache import positive_env
from . import lib
from .client import device_count, platform


DEFAULT_CACHE_MAX_BYTES = 2 << 30
_MAGIC = b"NXPYEXE1"


def set_cache_dir(path) -> None:
    """Stores compiled executables under ``path`` (None: no persistent cache) and loads
    them from there, across processes. Also read from ``NXPY_CACHE_DIR``. Only point it
    at a directory you trust: loading an executable runs its code."""
    lib._state["cache_dir"] = None if path is None else os.fspath(path)
    lib._state.pop("disk", None)


def cache_dir():
    """The persistent cache's directory, or None."""
    if "cache_dir" in lib._state:
        return lib._state["cache_dir"]
    return os.environ.get("NXPY_CACHE_DIR") or None


def _disk_cache():
    root = cache_dir()
    if root is None:
        return None
    d = lib._state.get("disk")
    if d is None or d.root != root:
        d = lib._state["disk"] = _DiskCache(root, _max_bytes())
    return d


def _max_bytes() -> int:
    return positive_env("NXPY_CACHE_MAX_BYTES", DEFAULT_CACHE_MAX_BYTES)


def _digest(module_text, opts, devs) -> str:
    """What an executable depends on: the module, the compile options (device assignment
    included), the devices' kind and the jaxlib version."""
    h = hashlib.sha256()
    for part in (module_text.encode(), opts.SerializeAsString(),
                 f"{platform()}|{devs[0].device_kind}|{len(devs)}|{device_count()}|"
                 f"{lib.jaxlib_version()}".encode()):
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
