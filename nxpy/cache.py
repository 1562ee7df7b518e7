"""Process-wide caches that compute each entry once, even under threads.

:class:`LockedCache` maps keys to values; when several threads ask for a missing key at
once, one computes it and the others wait for its result (as EXLA's LockedCache). A
failed computation is not cached: every waiting thread then tries itself, so each gets
the error. :class:`FunctionCache` keys entries by a Python function (weakly: the entries
go with the function) and the rest of a key.

The caches of compiled programs are bounded: ``NXPY_PROGRAM_CACHE_SIZE`` (default
:data:`DEFAULT_PROGRAM_CACHE_SIZE`) programs per function (``jit``, ``shard_jit``), and
:data:`PROCESS_FACTOR` times as many in the process-wide tables (XLA executables, EXLA's
eager one-op programs); beyond that the least recently used entry goes (and is traced or
compiled again if it is needed again).

>>> cache = LockedCache()
>>> calls = []
>>> cache.get(("k", 1), lambda: calls.append(1) or "value"), cache.get(("k", 1), lambda: "other")
('value', 'value')
>>> len(calls), len(cache)
(1, 1)
"""
from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict

__all__ = ["LockedCache", "FunctionCache", "positive_env", "program_cache_size", "put_bounded",
           "DEFAULT_PROGRAM_CACHE_SIZE", "PROCESS_FACTOR"]

DEFAULT_PROGRAM_CACHE_SIZE = 512
PROCESS_FACTOR = 8


def positive_env(name: str, default: int) -> int:
    """The positive integer in environment variable ``name`` (``default`` if unset)."""
    v = os.environ.get(name)
    if v is None:
        return default
    try:
        n = int(v)
        if n < 1:
            raise ValueError
    except ValueError:
        raise ValueError(f"{name} must be a positive integer, got {v!r}") from None
    return n


def program_cache_size() -> int:
    """Compiled programs kept per function (``NXPY_PROGRAM_CACHE_SIZE``)."""
    return positive_env("NXPY_PROGRAM_CACHE_SIZE", DEFAULT_PROGRAM_CACHE_SIZE)


def put_bounded(table: dict, key, value, maxsize: int):
    """``table[key] = value``, dropping the oldest entries beyond ``maxsize`` (for the
    plain-dict lookup tables of hot paths, which are copies of a bounded cache)."""
    table[key] = value
    while len(table) > maxsize:
        try:
            del table[next(iter(table))]
        except (KeyError, StopIteration, RuntimeError):  # another thread got there first
            break
    return value


class _Pending:
    __slots__ = ("done", "value", "failed")

    def __init__(self):
        self.done = threading.Event()
        self.value = None
        self.failed = False


class LockedCache:
    """``key → value``; :meth:`get` computes a missing value once. With ``maxsize``, the
    least recently used entries beyond it are dropped.

    >>> c = LockedCache(maxsize=2)
    >>> [c.get(k, lambda: k * 10) for k in (1, 2, 1, 3)], sorted(c._values)
    ([10, 20, 10, 30], [1, 3])
    """

    def __init__(self, maxsize: int | None = None):
        self._lock = threading.Lock()
        self._values: dict = OrderedDict() if maxsize else {}
        self._pending: dict = {}
        self.maxsize = maxsize

    def __len__(self):
        return len(self._values)

    def peek(self, key, default=None):
        """The value if it is there (no computing, no waiting)."""
        return self._values.get(key, default)

    def get(self, key, compute):
        """The value for ``key``, computed by ``compute()`` if missing (by one thread; the
        others asking meanwhile wait for it)."""
        v = self._values.get(key, _MISSING)
        if v is not _MISSING:
            if self.maxsize:
                with self._lock:
                    if key in self._values:
                        self._values.move_to_end(key)
            return v
        while True:
            with self._lock:
                v = self._values.get(key, _MISSING)
                if v is not _MISSING:
                    return v
                pending = self._pending.get(key)
                mine = pending is None
                if mine:
                    pending = self._pending[key] = _Pending()
            if not mine:
                pending.done.wait()
                if not pending.failed:
                    return pending.value
                continue  # the other thread failed: try ourselves (and get its error)
            try:
                value = compute()
            except BaseException:
                with self._lock:
                    del self._pending[key]
                pending.failed = True
                pending.done.set()
                raise
            with self._lock:
                self._values[key] = value
                del self._pending[key]
                if self.maxsize:
                    while len(self._values) > self.maxsize:
                        self._values.popitem(last=False)
            pending.value = value
            pending.done.set()
            return value

    def clear(self):
        with self._lock:
            self._values.clear()


_MISSING = object()


class FunctionCache:
    """``(function, key) → value``, each function's entries held weakly by the function
    (when it is garbage, they go), computed once per key like :class:`LockedCache`; with
    ``bounded``, each function keeps :func:`program_cache_size` entries."""

    def __init__(self, bounded: bool = False):
        self.bounded = bounded
        self._lock = threading.Lock()
        self._weak: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._strong: dict = {}  # functions that cannot be weakly referenced

    def of(self, fun) -> LockedCache:
        """The cache of one function."""
        with self._lock:
            try:
                c = self._weak.get(fun)
                if c is None:
                    c = self._weak[fun] = self._new()
            except TypeError:
                c = self._strong.get(fun)
                if c is None:
                    c = self._strong[fun] = self._new()
        return c

    def _new(self):
        return LockedCache(program_cache_size() if self.bounded else None)

    def get(self, fun, key, compute):
        return self.of(fun).get(key, compute)
