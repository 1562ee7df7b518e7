"""Process-wide caches that compute each entry once, even under threads.

:class:`LockedCache` maps keys to values; when several threads ask for a missing key at
once, one computes it and the others wait for its result (as EXLA's LockedCache). A
failed computation is not cached: every waiting thread then tries itself, so each gets
the error. :class:`FunctionCache` keys entries by a Python function (weakly: the entries
go with the function) and the rest of a key.

>>> cache = LockedCache()
>>> calls = []
>>> cache.get(("k", 1), lambda: calls.append(1) or "value"), cache.get(("k", 1), lambda: "other")
('value', 'value')
>>> len(calls), len(cache)
(1, 1)
"""
from __future__ import annotations

import threading
import weakref

__all__ = ["LockedCache", "FunctionCache"]


class _Pending:
    __slots__ = ("done", "value", "failed")

    def __init__(self):
        self.done = threading.Event()
        self.value = None
        self.failed = False


class LockedCache:
    """``key → value``; :meth:`get` computes a missing value once."""

    def __init__(self):
        self._lock = threading.Lock()
        self._values: dict = {}
        self._pending: dict = {}

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
            pending.value = value
            pending.done.set()
            return value

    def clear(self):
        with self._lock:
            self._values.clear()


_MISSING = object()


class FunctionCache:
    """``(function, key) → value``, each function's entries held weakly by the function
    (when it is garbage, they go), computed once per key like :class:`LockedCache`."""

    def __init__(self):
        self._lock = threading.Lock()
        self._weak: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._strong: dict = {}  # functions that cannot be weakly referenced

    def of(self, fun) -> LockedCache:
        """The cache of one function."""
        with self._lock:
            try:
                c = self._weak.get(fun)
                if c is None:
                    c = self._weak[fun] = LockedCache()
            except TypeError:
                c = self._strong.get(fun)
                if c is None:
                    c = self._strong[fun] = LockedCache()
        return c

    def get(self, fun, key, compute):
        return self.of(fun).get(key, compute)
