"""What nxpy traced, lowered and compiled, and why: counters, events, logging.

Every trace of a function into a graph, every lowering of a graph to StableHLO, every XLA
compile and every lookup in the persistent executable cache is an event. Events are
counted (:func:`counters`), passed to the handlers attached with :func:`attach` (as Nx's
``:telemetry`` events: a name, a duration, the cache key and the function's name) and
logged to the ``nxpy`` logger at DEBUG level. Every buffer copied between the host and a
device is counted too (``transfer_to_device``, ``transfer_to_host``; :func:`counters` says
what each counts); on hot call paths by a :func:`tally`, summed when the counters are
read. A function traced more than :data:`RETRACE_WARNING` times (its argument shapes or
types keep changing) gets a warning, as EXLA warns.

>>> import nxpy as nx
>>> from nxpy import telemetry
>>> from nxpy.defn import jit
>>> before = telemetry.counters()
>>> events = []
>>> detach = telemetry.attach(events.append)
>>> f = jit(lambda x: x * 3)
>>> f(nx.tensor([1, 2])).tolist(), f(nx.tensor([3, 4])).tolist()
([3, 6], [9, 12])
>>> detach()
>>> telemetry.counters()["trace"] - before.get("trace", 0), [e.name for e in events]
(1, ['trace'])
"""
from __future__ import annotations

import itertools
import logging
import os
import sys
import threading
import time
import warnings
import weakref
from collections import Counter
from dataclasses import dataclass

__all__ = ["Event", "counters", "attach", "event", "count", "tally", "timed",
           "RETRACE_WARNING", "note_trace", "unobserved"]

log = logging.getLogger("nxpy")

#: a function traced more often than this gets a warning (shapes changing on every call?)
RETRACE_WARNING = 20

_lock = threading.Lock()
_counts: Counter = Counter()
_handlers: list = []
# traces per function, held weakly (a recycled id() must not inherit another's count)
_traces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_traces_strong: dict = {}  # functions without weak references
# the lazily summed counters of hot call paths (see tally): id -> (name, per, count)
_tallies: dict = {}
_retired: list = []  # ids of tallies whose owner is gone (appended without the lock)


class _Local(threading.local):
    off = False  # this thread's events are not recorded


_local = _Local()


@dataclass(frozen=True)
class Event:
    """``name``: ``trace``, ``lower``, ``compile``, ``disk_hit`` or ``disk_miss``;
    ``duration`` in seconds; ``key``: what the cache knows the work by; ``function``: the
    name of the user's function (or ``""``)."""
    name: str
    duration: float
    key: object
    function: str


def counters() -> dict:
    """Cumulative counts of every event since the process started, and of the buffers
    copied between the host and a device, one per buffer:

    * ``transfer_to_device``: every host array copied to a device: a tensor made on or
      moved to an EXLA device (``nx.tensor(..., backend="exla")``, ``backend_transfer``,
      ``device_put``: one per device it is put on), and every NumPy array or NumPy-backend
      tensor given to a compiled EXLA program, on every call (JAX's dispatch copies them
      in each time);
    * ``transfer_to_host``: every read of a device buffer's values to the host
      (``to_numpy``, ``np.asarray``, printing): one per distinct block of a sharded
      tensor, one for a replicated or single-device one, counted on every read.

    These are the copies ``jax.transfer_guard`` sees (on the CPU, JAX reads a buffer as a
    view, which its guard does not see; nxpy counts the read all the same, so a count is
    the same on every platform). Not counted: copies between devices, and the host
    callbacks (``hook``, ``print_value``, ``runtime_call``) inside programs. A loop whose
    data stays on the devices shows neither growing::

        before = telemetry.counters()
        for _ in range(8):
            params = step(params, batch)
        after = telemetry.counters()
        assert after.get("transfer_to_host", 0) == before.get("transfer_to_host", 0)
    """
    with _lock:
        _fold_retired()
        out = Counter(_counts)
        for name, per, c in _tallies.values():
            out[name] += per * _value(c)
        return dict(out)


def tally(name: str, per: int, owner):
    """A function of no arguments that adds ``per`` to counter ``name`` each call, for
    call paths where :func:`count`'s lock and frame cost too much: it is a C function (an
    ``itertools.count``'s ``__next__``), summed into :func:`counters` when they are read.
    Its calls are counted inside :func:`unobserved` blocks too. When ``owner`` (the only
    holder of the function) is garbage collected, its total is kept.

    >>> def call(): bump()
    >>> bump = tally("example_calls", 2, call)
    >>> before = counters().get("example_calls", 0)
    >>> call(); call()
    >>> counters()["example_calls"] - before
    4
    """
    c = itertools.count()
    key = id(c)
    with _lock:
        _tallies[key] = (name, per, c)
    weakref.finalize(owner, _retired.append, key)  # no lock: it may run inside one
    return c.__next__


def _value(c) -> int:
    return int(repr(c)[6:-1])  # "count(n)": reading it does not advance it


def _fold_retired() -> None:
    """Moves the totals of the tallies whose owners are gone into the counts (under the
    lock)."""
    while _retired:
        name, per, c = _tallies.pop(_retired.pop())
        _counts[name] += per * _value(c)


def attach(handler):
    """Calls ``handler(event)`` for every event from now on; returns a function that
    detaches it."""
    with _lock:
        _handlers.append(handler)

    def detach():
        with _lock:
            if handler in _handlers:
                _handlers.remove(handler)
    return detach


class unobserved:
    """``with unobserved():`` this thread's work inside the block records no events (for
    tools that compile programs of their own on the user's behalf, such as the StableHLO
    round-trip checker, whose compiles must not show in the user's counts)."""

    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = _local.off
        _local.off = True

    def __exit__(self, *exc):
        _local.off = self.prev


def event(name: str, *, duration: float = 0.0, key=None, function: str = "") -> None:
    """Records one event."""
    if _local.off:
        return
    with _lock:
        _counts[name] += 1
        handlers = list(_handlers)
    log.debug("nxpy %s of %s took %.3f ms (key %r)", name, function or "a program",
              duration * 1e3, key)
    e = Event(name, duration, key, function)
    for h in handlers:
        h(e)


def count(name: str, n: int = 1) -> None:
    """Adds ``n`` to counter ``name`` (no event: for the transfer counters, which sit on
    call paths that must stay cheap)."""
    if _local.off:
        return
    with _lock:
        _counts[name] += n


class timed:
    """``with timed("compile", key=..., function=...):`` records the event when the block
    finishes without an exception."""

    __slots__ = ("name", "key", "function", "start")

    def __init__(self, name, key=None, function=""):
        self.name, self.key, self.function = name, key, function

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            event(self.name, duration=time.perf_counter() - self.start, key=self.key,
                  function=self.function)


def note_trace(fun, name: str) -> None:
    """Counts a trace of ``fun``; warns once when it passes :data:`RETRACE_WARNING`."""
    if _local.off:
        return
    with _lock:
        try:
            table = _traces
            n = table.get(fun, 0) + 1
            table[fun] = n
        except TypeError:
            table = _traces_strong
            n = table.get(id(fun), 0) + 1
            table[id(fun)] = n
        warn = n == RETRACE_WARNING + 1
    if warn:
        warnings.warn(f"{name} has been traced and compiled {n} times: its arguments' shapes "
                      f"or types (or its static options) change between calls, so every call "
                      f"compiles anew; pad the arguments to a few fixed shapes, or compile "
                      f"ahead of time with nxpy.defn.compile", RuntimeWarning,
                      stacklevel=_user_stacklevel())


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside nxpy (warnings point at user code)."""
    f, level = sys._getframe(1), 1
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f, level = f.f_back, level + 1
    return level
