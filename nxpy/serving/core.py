"""Serving a batched function to concurrent callers (Nx's ``Nx.Serving``): callers'
examples are merged into batches of at most ``batch_size`` rows (or what arrived within
``batch_timeout`` seconds), padded to ``batch_size`` so that one compiled program serves
every size, run on a batching thread (one per device with ``partitions=True``), and each
caller gets its own rows back.

>>> import nxpy as nx
>>> from nxpy.serving import Batch, Serving
>>> with Serving(lambda x: x * 2, batch_size=4, batch_timeout=0.01, compiler="exla") as s:
...     s.batched_run(Batch.stack([nx.tensor([1.0, 2.0])])).tolist()
[[2.0, 4.0]]
"""
from __future__ import annotations

import collections
import concurrent.futures as cf
import queue
import threading
import time

import numpy as np

from .. import ops as O, pjrt, types as T
from ..backend import get_backend
from ..defn import tree as tree_mod
from ..defn.core import Jit, jit
from ..defn.kernel import hook as _hook
from ..mesh import Mesh
from ..tensor import Tensor
from .batch import Batch

__all__ = ["Serving", "ServingError", "ServingStopped", "stream"]


class ServingError(RuntimeError):
    """A request the serving could not run (its batch failed, it does not fit)."""


class ServingStopped(ServingError):
    """The serving stopped (or was never started) before the request ran."""


_NUMPY = get_backend("numpy")
_local = threading.local()  # the batch a batching thread is running (for stream hooks)
_active: dict = {}  # thread id -> the pieces of the batch it runs (all servings)
_active_lock = threading.Lock()
#: threads started outside Python (XLA's) appear as these
_FOREIGN = getattr(threading, "_DummyThread", ())


class _StreamHook:
    """The host function of :func:`stream`: hands the rows of each caller of the running
    batch its own rows of the value, as an event ``(name, tensor)``."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __call__(self, t):
        pieces = getattr(_local, "pieces", None)
        if pieces is None and isinstance(threading.current_thread(), _FOREIGN):
            # called from a thread of XLA's (not Python's): the one batch running, if one
            with _active_lock:
                pieces = next(iter(_active.values())) if len(_active) == 1 else None
        if not pieces:
            return
        value = np.asarray(t.to_numpy())
        rows = value.shape[0] if value.ndim else None
        for piece in pieces:
            req = piece.request
            if req.events is None or req.done:
                continue
            if rows is not None and rows >= piece.pos + piece.n:
                part = value[piece.pos:piece.pos + piece.n]
            else:  # not batched along the first axis: everyone gets all of it
                part = value
            req.events.put((self.name, O.from_numpy(np.array(part))))


def stream(x, name: str):
    """``x``, streamed to the callers of the batch under ``name`` when the program runs
    (Nx's serving ``hooks``): inside the function a :class:`Serving` runs, each caller
    of ``batched_run(..., stream=True)`` receives the event ``(name, its rows of x)``
    before its result; outside a serving it is ``x``.

    >>> import nxpy as nx
    >>> from nxpy.serving import Batch, Serving, stream
    >>> def model(x):
    ...     h = stream(x + 1, "hidden")
    ...     return h * 10
    >>> with Serving(model, batch_size=2, batch_timeout=0.01, compiler="exla") as s:
    ...     [(k, v.tolist()) for k, v in s.batched_run(Batch.stack([nx.tensor(1.0)]),
    ...                                                  stream=True)]
    [('hidden', [2.0]), ('batch', [20.0])]
    """
    if not isinstance(name, str) or name == "batch":
        raise ValueError(f"stream: expected name to be a string other than 'batch' (the "
                         f"result's event), got {name!r}")
    return _hook(x, _StreamHook(name))


class _Request:
    """One caller's batch: its pieces' results gather here until all have arrived.

    The caller waits on ``ready``, a lock held until the request completes (a plain lock
    is the cheapest thing a thread can block on and another release); ``future`` is a
    :class:`concurrent.futures.Future` only for :meth:`Serving.submit`'s callers.

    The callers of a batch wake one another: the batching thread wakes the first, and
    each caller, once awake, wakes the next (``wakes``, the batch's queue of requests
    still asleep) — so one thread at a time waits for the GIL, rather than all of the
    batch's callers at once (which costs each of them more thread switches). A caller
    that stops waiting for any reason still wakes the next (:meth:`pass_on`)."""

    __slots__ = ("batch", "future", "parts", "remaining", "events", "done", "lock",
                 "cancelled", "ready", "value", "error", "wakes")

    def __init__(self, batch, events=None, future=None):
        self.batch = batch
        self.future = future
        self.parts = None  # {offset: leaves} once a request's rows come in several pieces
        self.remaining = batch.size
        self.events = events  # a queue.Queue when the caller streams
        self.done = False
        self.lock = threading.Lock()
        self.cancelled = False
        self.ready = threading.Lock()
        self.ready.acquire()
        self.value = self.error = None
        self.wakes = None

    def result(self, timeout=None):
        """The result (or its error raised) once complete; raises :class:`_Pending`
        after ``timeout`` seconds (then the caller cancels the request and calls
        :meth:`pass_on`)."""
        if not self.ready.acquire(timeout=-1 if timeout is None else timeout):
            raise _Pending
        self.ready.release()  # complete for good: a later call returns at once
        self.pass_on()
        if self.error is not None:
            raise self.error
        return self.value

    def pass_on(self) -> None:
        """Wakes the next caller of the batch that completed this request, if any (once
        this request is complete or failed)."""
        wakes, self.wakes = self.wakes, None
        if wakes is not None:
            _wake_next(wakes)

    def _complete(self, value, error) -> None:
        """(Once, after ``done`` was set.) Hands the outcome to whoever waits for it."""
        self.value, self.error = value, error
        self.ready.release()
        future, self.future = self.future, None  # (its callback holds the request)
        if future is not None:
            try:
                if error is None:
                    future.set_result(value)
                else:
                    future.set_exception(error)
            except cf.InvalidStateError:  # its caller cancelled it
                pass
        if self.events is not None:
            self.events.put(("batch", value) if error is None else ("error", error))

    def fail(self, exc):
        with self.lock:
            if self.done:
                return
            self.done = True
        self._complete(None, exc)

    def deliver(self, offset, leaves, n, out_tree, wakes):
        """Rows ``[offset, offset + n)`` of the result, as one array per leaf of
        ``out_tree`` (views of the batch's output: no copy when a request runs whole).
        A caller waiting in :meth:`result` is not woken here but queued on ``wakes``."""
        with self.lock:
            if self.done:
                return
            if self.parts is None and n == self.remaining:  # all of it in one piece
                self.done = True
            else:
                if self.parts is None:
                    self.parts = {}
                self.parts[offset] = leaves
                self.remaining -= n
                if self.remaining > 0:
                    return
                self.done = True
                order = [self.parts[k] for k in sorted(self.parts)]
                leaves = [np.concatenate([p[i] for p in order]) for i in range(len(leaves))]
            if out_tree == tree_mod.LEAF:
                result = _host_tensor(leaves[0])
            else:
                result = tree_mod.unflatten(out_tree, [_host_tensor(a) for a in leaves])
            if self.future is None and self.events is None:  # its caller waits in result
                # (under the lock: a caller that timed out finds itself queued, or failed)
                self.value = result
                self.wakes = wakes
                wakes.append(self)
                return
        self._complete(result, None)


def _wake_next(wakes) -> None:
    """Wakes the first request of ``wakes`` (a deque) still asleep."""
    try:
        req = wakes.popleft()
    except IndexError:
        return
    req.ready.release()


class _Pending(Exception):
    """A request not complete within its caller's timeout."""


def _host_tensor(a: np.ndarray) -> Tensor:
    """A tensor of the NumPy backend holding ``a`` (results of a batch: no copy)."""
    return _NUMPY.from_numpy(a, T.from_dtype(a.dtype))


class _Piece:
    """Rows ``[offset, offset + n)`` of a request, at row ``pos`` of the batch that runs
    them."""

    __slots__ = ("request", "offset", "n", "pos", "arrived")

    def __init__(self, request, offset, n, arrived):
        self.request, self.offset, self.n, self.arrived = request, offset, n, arrived
        self.pos = 0


class _Partition:
    """One batching thread and the function it runs (on one device)."""

    def __init__(self, fn, device):
        self.fn = fn
        self.jitted = isinstance(fn, Jit)
        self.device = device
        self.batches = 0
        self.latencies: collections.deque = collections.deque(maxlen=4096)
        self.thread: threading.Thread | None = None


def _gather(pieces, template, pad) -> list:
    """One array per leaf: the pieces' rows in order, then ``pad`` rows of zeros (one
    copy of the rows into the batch's arrays)."""
    entries = []  # per piece, its rows' array per leaf
    for p in pieces:
        b = p.request.batch
        if p.n == b.size and len(b._parts) == 1:  # a one-entry request, whole
            entries.append(b._parts[0])
        else:
            entries.append(b._slice(p.offset, p.offset + p.n).arrays())
    rows = sum(p.n for p in pieces)
    out = []
    for i, (shape, dtype) in enumerate(template.leaves):
        col = [arrays[i] for arrays in entries]
        if not pad:
            out.append(col[0] if len(col) == 1 else np.concatenate(col))
            continue
        a = np.empty((rows + pad, *shape), dtype)
        np.concatenate(col, out=a[:rows])
        a[rows:] = 0
        out.append(a)
    return out


def _check_positive(v, what, kind=int):
    if kind is int:
        ok = isinstance(v, int) and not isinstance(v, bool) and v > 0
        want = "a positive integer"
    else:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
        want = "a non-negative number of seconds"
    if not ok:
        raise ValueError(f"Serving: expected {what} to be {want}, got {v!r}")


class Serving:
    """Serves ``fn``, a batched function, to concurrent callers (Nx's ``Nx.Serving``).

    ``fn`` takes the batch's data (its entries' container, each tensor with a leading
    axis of ``batch_size`` rows) and returns a tensor or a container of tensors with the
    same leading axis. It may be a jitted function, or any callable (with ``compiler=``
    and ``**jit_opts`` it is jitted: ``jit(fn, compiler=..., **jit_opts)``).

    * ``run(batch)`` runs a batch in the caller's thread (larger ones in several runs);
    * ``start()``/``stop()`` (or ``with serving:``) start and stop the batching threads;
      ``batched_run(batch)`` (thread-safe) queues the batch, the thread merges the
      queued rows into batches and runs them, and the caller gets its rows;
    * ``partitions=True`` runs one batching thread per device (a list of device
      positions, or a count, picks them), each with the function compiled for its
      device, so batches run concurrently; a list of meshes runs a sharded model, one
      batching thread per mesh (``jit(fn, mesh=m, **jit_opts)``, with the model's
      ``in_shardings`` among ``jit_opts``);
    * ``preprocess(input) -> Batch`` and ``postprocess(output) -> result`` run in the
      caller's thread around ``batched_run`` and ``run`` (Nx's client pre- and
      postprocessing).

    Every batch is padded to ``batch_size`` rows (counted in ``stats()["padded"]``).
    """

    def __init__(self, fn, *, batch_size: int, batch_timeout: float = 0.1, compiler=None,
                 partitions=False, preprocess=None, postprocess=None, **jit_opts):
        if not callable(fn):
            raise TypeError(f"Serving: expected fn to be a callable, got {type(fn).__name__}")
        _check_positive(batch_size, "batch_size")
        _check_positive(batch_timeout, "batch_timeout", float)
        for name, f in (("preprocess", preprocess), ("postprocess", postprocess)):
            if f is not None and not callable(f):
                raise TypeError(f"Serving: expected {name} to be a callable or None, got "
                                f"{type(f).__name__}")
        self.batch_size = batch_size
        self.batch_timeout = float(batch_timeout)
        self.preprocess, self.postprocess = preprocess, postprocess
        self._partitions = [_Partition(f, d)
                            for f, d in self._functions(fn, compiler, partitions, jit_opts)]
        self._cond = threading.Condition()
        self._queues: dict = {}  # (key, template) -> deque of _Piece
        self._queued_rows: dict = {}  # (key, template) -> rows queued
        self._running = False
        self._stopping = False
        self._requests = 0
        self._padded = 0
        self._rows = 0
        self._largest = 0

    # ---- set-up --------------------------------------------------------------------------
    @staticmethod
    def _functions(fn, compiler, partitions, jit_opts):
        """``[(function, device position or None)]``: one per partition."""
        if partitions in (False, None) and isinstance(fn, Jit) and compiler is None \
                and not jit_opts:  # used as it is
            return [(fn, fn.opts.get("device_id"))]
        if isinstance(fn, Jit):
            base, compiler, opts = fn.fun, (compiler or fn.compiler), {**fn.opts, **jit_opts}
        else:
            base, opts = fn, dict(jit_opts)
        jitted = isinstance(fn, Jit) or compiler is not None or bool(jit_opts)
        if partitions is False or partitions is None:
            if not jitted:
                return [(fn, None)]
            return [(jit(base, compiler, **opts), opts.get("device_id"))]
        if not jitted:
            raise ValueError("Serving: partitions need a function compiled per device: pass "
                             "a jitted function or compiler=")
        compiler = compiler or "exla"
        if "device_id" in opts:
            raise ValueError("Serving: partitions pick the devices; drop device_id")
        if partitions is True:
            devices = list(pjrt.local_positions())
        elif isinstance(partitions, int) and not isinstance(partitions, bool):
            local = list(pjrt.local_positions())
            if not 1 <= partitions <= len(local):
                raise ValueError(f"Serving: expected partitions to be a count in [1, "
                                 f"{len(local)}] (the devices), got {partitions}")
            devices = local[:partitions]
        elif isinstance(partitions, (list, tuple)) and partitions \
                and all(isinstance(m, Mesh) for m in partitions):
            if "mesh" in opts:
                raise ValueError("Serving: partitions name the meshes; drop mesh")
            return [(jit(base, compiler, mesh=m, **opts), tuple(m.devices)) for m in partitions]
        elif isinstance(partitions, (list, tuple)) and partitions \
                and all(isinstance(d, int) and not isinstance(d, bool) for d in partitions):
            devices = list(partitions)
        else:
            raise ValueError(f"Serving: expected partitions to be True, False, a device "
                             f"count, a list of device positions or a list of meshes (a "
                             f"sharded model), got {partitions!r}")
        return [(jit(base, compiler, device_id=d, **opts), d) for d in devices]

    @property
    def running(self) -> bool:
        """Whether the batching threads are running (started and not stopped)."""
        return self._running and not self._stopping

    @property
    def devices(self) -> list:
        """The device of each partition (None: the function's own choice; a tuple of
        devices: a mesh's)."""
        return [p.device for p in self._partitions]

    # ---- inline --------------------------------------------------------------------------
    def _prepare(self, batch, what):
        if self.preprocess is not None:
            batch = self.preprocess(batch)
        if not isinstance(batch, Batch):
            raise TypeError(f"Serving.{what}: expected a Batch"
                            f"{' from preprocess' if self.preprocess else ''}, got "
                            f"{type(batch).__name__}")
        if batch.size == 0:
            raise ValueError(f"Serving.{what}: expected a batch with rows, got an empty one")
        return batch

    def _finish(self, result):
        return self.postprocess(result) if self.postprocess is not None else result

    def run(self, batch):
        """Runs ``batch`` in the caller's thread and returns its rows of ``fn``'s result
        (Nx's ``Nx.Serving.run/2``): padded to ``batch_size``, and in runs of
        ``batch_size`` rows when it is larger.

        >>> import nxpy as nx
        >>> s = Serving(lambda x: x + 1, batch_size=2, compiler="exla")
        >>> s.run(Batch.concatenate([nx.tensor([1, 2, 3])])).tolist()
        [2, 3, 4]
        """
        batch = self._prepare(batch, "run")
        req = _Request(batch, None)
        part = self._partitions[0]
        for start in range(0, batch.size, self.batch_size):
            n = min(self.batch_size, batch.size - start)
            piece = _Piece(req, start, n, 0.0)
            self._run_batch(part, batch.batch_key, batch.template, [piece])
        return self._finish(req.result())

    def _run_batch(self, part, key, template, pieces) -> None:
        """Runs the pieces as one batch padded to ``batch_size`` and hands out the rows."""
        pos = 0
        for p in pieces:
            p.pos = pos
            pos += p.n
        pad = self.batch_size - pos
        t0 = time.perf_counter()
        _local.pieces = pieces
        me = threading.get_ident()
        with _active_lock:
            _active[me] = pieces
        try:
            arrays = _gather(pieces, template, pad)
            if not part.jitted:  # a jitted function takes the arrays (its fastest path)
                arrays = [O.from_numpy(a) for a in arrays]
            data = tree_mod.unflatten(template.tree, arrays)
            out = part.fn(data)
            leaves, out_tree = tree_mod.flatten(out)
            arrays = [np.asarray(v.to_numpy()) if isinstance(v, Tensor) else np.asarray(v)
                      for v in leaves]
            for a in arrays:
                if a.ndim == 0 or a.shape[0] != self.batch_size:
                    raise ServingError(
                        f"Serving: expected fn to return tensors with a leading batch axis "
                        f"of {self.batch_size} rows, got shape {a.shape}")
        except BaseException as e:  # the callers of this batch get it; the serving goes on
            err = e if isinstance(e, Exception) else ServingError(repr(e))
            for p in pieces:
                p.request.fail(err)
            if not isinstance(e, Exception):
                raise  # ends the batching thread (see _loop)
            return
        finally:
            _local.pieces = None
            with _active_lock:
                _active.pop(me, None)
            with self._cond:
                part.batches += 1
                part.latencies.append(time.perf_counter() - t0)
                self._padded += pad
                self._largest = max(self._largest, pos)
        wakes = collections.deque()  # the callers to wake: the first, then one another
        if len(arrays) == 1:
            a = arrays[0]
            for p in pieces:
                p.request.deliver(p.offset, [a[p.pos:p.pos + p.n]], p.n, out_tree, wakes)
        else:
            for p in pieces:
                pos, end = p.pos, p.pos + p.n
                p.request.deliver(p.offset, [a[pos:end] for a in arrays], p.n, out_tree,
                                  wakes)
        _wake_next(wakes)

    # ---- the batching threads ------------------------------------------------------------
    def start(self) -> "Serving":
        """Starts the batching threads (one per partition); returns the serving."""
        with self._cond:
            if self._running:
                raise RuntimeError("Serving.start: already started")
            self._running, self._stopping = True, False
        for i, part in enumerate(self._partitions):
            part.thread = threading.Thread(target=self._loop, args=(part,), daemon=True,
                                           name=f"nxpy-serving-{i}")
            part.thread.start()
        return self

    def stop(self, *, drain: bool = True, timeout: float | None = 30.0) -> None:
        """Stops the batching threads: with ``drain`` they first run what is queued,
        otherwise queued requests fail with :class:`ServingStopped`; requests after this
        fail too. Joins the threads (each for at most ``timeout`` seconds)."""
        with self._cond:
            if not self._running:
                return
            self._stopping = True
            if not drain:
                self._fail_queued(ServingStopped(
                    "Serving: the serving stopped before this request ran"))
            self._cond.notify_all()
        for part in self._partitions:
            if part.thread is not None:
                part.thread.join(timeout)
        with self._cond:
            self._running = False
            self._fail_queued(ServingStopped(
                "Serving: the serving stopped before this request ran"))

    def _fail_queued(self, exc) -> None:
        """(Under the lock.) Fails and drops every queued piece's request."""
        reqs = {id(p.request): p.request for q in self._queues.values() for p in q}
        self._queues.clear()
        self._queued_rows.clear()
        for r in reqs.values():
            r.fail(exc)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _take(self):
        """(Under the lock.) The pieces of the next batch, or None to stop."""
        while True:
            live = [(q[0].arrived, k) for k, q in self._queues.items() if q]
            if not live:
                if self._stopping:
                    return None
                self._cond.wait()
                continue
            first, k = min(live, key=lambda t: t[0])
            deadline = first + self.batch_timeout
            now = time.monotonic()
            if self._queued_rows[k] < self.batch_size and now < deadline \
                    and not self._stopping:
                self._cond.wait(deadline - now)
                continue
            q, room, pieces, dropped = self._queues[k], self.batch_size, [], 0
            while q and room:
                p = q.popleft()
                r = p.request
                if r.cancelled or r.done:
                    dropped += p.n
                    continue
                if p.n > room:  # the rest of it waits for the next batch
                    q.appendleft(_Piece(r, p.offset + room, p.n - room, p.arrived))
                    p.n = room
                pieces.append(p)
                room -= p.n
            self._queued_rows[k] -= self.batch_size - room + dropped
            if not q:
                del self._queues[k]
                del self._queued_rows[k]
            elif len(self._partitions) > 1:  # rows left: another thread may take them
                self._cond.notify_all()
            if pieces:
                return k, pieces

    def _loop(self, part) -> None:
        pieces = []
        try:
            while True:
                pieces = []
                with self._cond:
                    job = self._take()
                if job is None:
                    return
                (key, template), pieces = job
                self._run_batch(part, key, template, pieces)
        except BaseException as e:  # the thread dies: no caller may wait for it forever
            err = ServingError(f"Serving: the batching thread {part.thread.name} failed: "
                               f"{type(e).__name__}: {e}")
            for p in pieces:
                p.request.fail(err)
            with self._cond:
                if all(q.thread is part.thread or not q.thread.is_alive()
                       for q in self._partitions):  # the last one: nothing runs requests
                    self._stopping = True
                    self._fail_queued(err)
            # the thread ends here (re-raising in a thread reaches no one)

    def batched_run(self, batch, *, timeout: float | None = None, stream: bool = False):
        """Queues ``batch`` (after ``preprocess``) to run merged with other callers' rows
        and returns its rows of the result (after ``postprocess``); thread-safe (Nx's
        ``Nx.Serving.batched_run/2``). A batch larger than ``batch_size`` runs in several
        batches and is put back together. ``timeout``: seconds to wait, after which the
        request's rows that have not run are dropped and :class:`TimeoutError` is raised.
        ``stream=True`` returns an iterator of events instead: ``(name, rows)`` for each
        :func:`stream` in ``fn``, then ``("batch", result)``.

        >>> import nxpy as nx
        >>> with Serving(lambda x: x * x, batch_size=8, compiler="exla") as s:
        ...     s.batched_run(Batch.stack([nx.tensor(3.0), nx.tensor(4.0)])).tolist()
        [9.0, 16.0]
        """
        if timeout is not None:
            _check_positive(timeout, "timeout", float)
        batch = self._prepare(batch, "batched_run")
        req = _Request(batch, queue.Queue() if stream else None)
        self._submit(req)
        if stream:
            return self._events(req, timeout)
        try:
            result = req.result(timeout)
        except _Pending:
            self._cancel(req)
            req.pass_on()  # (after the cancel: it either failed or is queued on wakes)
            raise TimeoutError(f"Serving.batched_run: no result within {timeout} s") from None
        except BaseException:  # its error, or an interrupt: the batch's others still wake
            if not req.done:
                self._cancel(req, ServingError("Serving.batched_run: the caller was "
                                               "interrupted"))
            req.pass_on()
            raise
        return self._finish(result)

    def submit(self, batch) -> cf.Future:
        """Queues ``batch`` as :meth:`batched_run` does and returns a
        :class:`concurrent.futures.Future` of its result (``postprocess`` is not applied:
        for callers that wait elsewhere, such as an event loop:
        ``await asyncio.wrap_future(serving.submit(batch))``).

        >>> import nxpy as nx
        >>> with Serving(lambda x: x - 1, batch_size=4, compiler="exla") as s:
        ...     s.submit(Batch.stack([nx.tensor(5)])).result(timeout=60).tolist()
        [4]
        """
        batch = self._prepare(batch, "submit")
        future = cf.Future()
        req = _Request(batch, None, future)
        self._submit(req)
        # cancelling the future (an event loop's task cancelled) drops its queued rows
        future.add_done_callback(lambda f: f.cancelled() and self._cancel(
            req, cf.CancelledError("Serving.submit: the future was cancelled")))
        return future

    def _submit(self, req) -> None:
        batch = req.batch
        size, bs = batch.size, self.batch_size
        k = (batch.batch_key, batch.template)
        now = time.monotonic()
        with self._cond:
            if not self._running or self._stopping:
                raise ServingStopped("Serving.batched_run: the serving is not running "
                                     "(start it, or use it as a context manager)")
            q = self._queues.get(k)
            if q is None:
                q = self._queues[k] = collections.deque()
                before = 0
            else:
                before = self._queued_rows[k]
            if size <= bs:
                q.append(_Piece(req, 0, size, now))
            else:
                for start in range(0, size, bs):
                    q.append(_Piece(req, start, min(bs, size - start), now))
            self._queued_rows[k] = after = before + size
            self._requests += 1
            self._rows += size
            # the batching threads wake for a new deadline (the first rows of a key) or a
            # full batch; rows in between wait for the deadline they are already waiting for
            if before == 0 or before < self.batch_size <= after:
                self._cond.notify_all()

    def _cancel(self, req, exc=None) -> None:
        """Drops the caller's rows that have not run (those running finish unseen) and
        fails the request with ``exc`` (by default: the caller timed out)."""
        with self._cond:
            req.cancelled = True
            k = (req.batch.batch_key, req.batch.template)
            q = self._queues.get(k)
            if q is not None:
                mine = [p for p in q if p.request is req]
                for p in mine:
                    q.remove(p)
                    self._queued_rows[k] -= p.n
                if not q:
                    del self._queues[k]
                    del self._queued_rows[k]
        req.fail(exc or TimeoutError("Serving.batched_run: the caller timed out"))

    def _events(self, req, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                name, value = req.events.get(timeout=left)
            except queue.Empty:
                self._cancel(req)
                raise TimeoutError(f"Serving.batched_run: no result within {timeout} s") \
                    from None
            if name == "error":
                raise value
            if name == "batch":
                yield name, self._finish(value)
                return
            yield name, value

    # ---- what happened -------------------------------------------------------------------
    def stats(self) -> dict:
        """``requests`` (batched_run calls), ``rows`` (their rows), ``batches`` (run,
        ``run`` included), ``padded`` (rows of padding run), ``largest`` (the most rows of
        data in one batch), ``queue`` (rows waiting) and
        per device ``devices``: ``{device: {"batches", "p50_ms", "p99_ms"}}`` (the
        latencies of its last 4096 batches; a mesh's devices are named ``"0,1,..."``)."""
        with self._cond:
            out = {"requests": self._requests, "rows": self._rows,
                   "padded": self._padded, "largest": self._largest,
                   "queue": sum(self._queued_rows.values())}
        devices = {}
        for i, p in enumerate(self._partitions):
            lat = np.array(list(p.latencies)) * 1e3
            name = p.device if p.device is not None else i
            if isinstance(name, tuple):  # a mesh's devices
                name = ",".join(map(str, name))
            devices[name] = {
                "batches": p.batches,
                "p50_ms": float(np.percentile(lat, 50)) if lat.size else None,
                "p99_ms": float(np.percentile(lat, 99)) if lat.size else None}
        out["batches"] = sum(d["batches"] for d in devices.values())
        out["devices"] = devices
        return out

