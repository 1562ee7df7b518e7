"""Notices that a process of a distributed nxpy program was lost, and tells the others.

jaxlib's own heartbeat cannot raise: when it notices a lost process it aborts the
survivors (see :func:`nxpy.pjrt.initialize_distributed`). nxpy therefore sets jaxlib's
heartbeat out of the way and watches the processes itself, with one TCP connection per
process to a *hub* (run by the helper process that also runs the coordination service):

* a process says ``hello P`` when it joins, ``bye`` when it leaves cleanly (after the
  shutdown barrier) and ``fail TEXT`` when it ends with an uncaught exception;
* when a connection closes without ``bye`` (the process died, was killed, exited without
  shutting down, raised, or its host stopped answering TCP keepalives), the hub sends
  ``lost P REASON`` to every other process.

The kernel closes a dead process's sockets at once, so the others learn of it within
milliseconds; a slow process (compiling, sleeping, waiting in a collective) keeps its
connection open and is never declared lost.

In each process a daemon thread (:class:`Watch`) reads the hub. On ``lost`` it raises the
given error in the main thread (``PyThreadState_SetAsyncExc``: taken at the main thread's
next Python bytecode); when the main thread has not taken it within :data:`GRACE` seconds
(it is blocked inside XLA), the thread prints the message and ends the process with
:data:`EXIT_STATUS`.

This module uses only the standard library.

>>> import socket, threading
>>> hub = socket.create_server(("127.0.0.1", 0))
>>> t = threading.Thread(target=serve, args=(hub, 5.0, 10), daemon=True)
>>> t.start()
>>> port = hub.getsockname()[1]
>>> a = socket.create_connection(("127.0.0.1", port)); a.sendall(b"hello 0\\n")
>>> b = socket.create_connection(("127.0.0.1", port)); b.sendall(b"hello 1\\nfail ValueError: x\\n")
>>> b.close()
>>> a.recv(100).decode()
'lost 1 raised ValueError: x\\n'
>>> a.sendall(b"bye\\n"); a.close(); t.join(5); t.is_alive()
False
"""
from __future__ import annotations

import ctypes
import errno
import os
import selectors
import socket
import threading
import time

__all__ = ["serve", "Watch", "keepalive", "GRACE", "EXIT_STATUS"]

#: seconds the main thread gets to take the error before the process ends
GRACE = 10.0
#: the exit status of a process ended because another was lost (EX_TEMPFAIL: a rerun of
#: every process may succeed)
EXIT_STATUS = 75


def keepalive(sock, seconds) -> None:
    """TCP keepalives on ``sock``: a peer whose host or network stops answering is noticed
    after about ``seconds`` (a dead process needs none: the kernel closes its sockets)."""
    seconds = max(3, int(seconds))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    idle = seconds // 2
    for name, value in (("TCP_KEEPIDLE", idle), ("TCP_KEEPINTVL", max(1, (seconds - idle) // 3)),
                        ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):  # Linux; elsewhere the system's defaults
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


# ----------------------------------------------------------------------------------------
# The hub
# ----------------------------------------------------------------------------------------
def serve(listener, first_wait: float, keepalive_seconds) -> None:
    """Runs the hub on a listening socket until every process that connected has gone
    (or none connected within ``first_wait`` seconds)."""
    sel = selectors.DefaultSelector()
    listener.setblocking(False)
    sel.register(listener, selectors.EVENT_READ)
    peers: dict = {}  # socket -> {"id", "buf", "bye", "fail"}
    lost: list = []   # every "lost" line sent so far (for processes that join later)
    ever = False
    deadline = time.monotonic() + first_wait
    while peers or (not ever and time.monotonic() < deadline):
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            if s is listener:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                conn.setblocking(True)
                conn.settimeout(5.0)  # a send to a stuck peer must not stop the hub
                keepalive(conn, keepalive_seconds)
                peers[conn] = {"id": None, "buf": b"", "bye": False, "fail": None,
                               "told": False}
                sel.register(conn, selectors.EVENT_READ)
                ever = True
                continue
            p = peers[s]
            timed_out = False
            try:
                data = s.recv(4096)
            except OSError as e:
                data, timed_out = b"", e.errno == errno.ETIMEDOUT
            if data:
                p["buf"] += data
                while b"\n" in p["buf"]:
                    line, p["buf"] = p["buf"].split(b"\n", 1)
                    _hub_line(line.decode("utf-8", "replace"), p, s, lost)
                if p["fail"] and not p["told"] and p["id"] is not None:
                    # the others learn at once; the process itself stays a peer until its
                    # connection closes (it is still exiting, its runtime client alive:
                    # the service must outlive it)
                    p["told"] = True
                    _tell(peers, s, f"lost {p['id']} raised {p['fail']}\n".encode(), lost)
                continue
            sel.unregister(s)
            del peers[s]
            s.close()
            if p["bye"] or p["told"] or p["id"] is None:
                continue
            if timed_out:
                reason = "stopped answering (is its host or the network down?)"
            else:
                reason = ("ended without nxpy.distributed.shutdown() (it died, was killed, "
                          "or exited early)")
            _tell(peers, None, f"lost {p['id']} {reason}\n".encode(), lost)
    sel.close()


def _tell(peers, source, line, lost):
    """Sends a ``lost`` line to every peer but ``source`` (and to later joiners)."""
    lost.append(line)
    for other in list(peers):
        if other is source:
            continue
        try:
            other.sendall(line)
        except OSError:
            pass  # its own loss is noticed when its connection closes


def _hub_line(line, p, s, lost):
    word, _, rest = line.partition(" ")
    if word == "hello":
        p["id"] = int(rest)
        for old in lost:
            try:
                s.sendall(old)
            except OSError:
                pass
    elif word == "bye":
        p["bye"] = True
    elif word == "fail":
        p["fail"] = rest.strip() or "an exception"


# ----------------------------------------------------------------------------------------
# Each process's watch
# ----------------------------------------------------------------------------------------
def _set_async(thread_id, exc) -> None:
    # exc None clears a pending one (NULL: no argtypes, so ctypes passes None as NULL)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               None if exc is None else ctypes.py_object(exc))


class Watch:
    """This process's connection to the hub at ``address`` (``(host, port)``) and the
    daemon thread that reads it. ``error`` is the exception class raised in the main
    thread when a process is lost (constructed with no arguments: it reads
    :attr:`message`, and should call :meth:`taken`); ``describe(process, reason)`` makes
    the message (``process`` None: the hub itself was lost)."""

    def __init__(self, address, process_id: int, *, timeout: float, keepalive_seconds,
                 error, describe):
        self.lost = None       # the lost process's index (-1: the hub) once one is lost
        self.message = None
        self.failed = None     # "Type: message" when this process ends with an exception
        self.exiting = False   # set at interpreter exit: no exception is raised then
        self.taken_event = threading.Event()
        self.lost_event = threading.Event()
        self._closing = False
        self._sync = 0         # > 0 while the main thread itself waits for a loss
        self._lock = threading.Lock()
        self._error, self._describe = error, describe
        self._main = threading.main_thread().ident
        self._sock = socket.create_connection(address, timeout=timeout)
        keepalive(self._sock, keepalive_seconds)
        self._sock.settimeout(None)
        self._sock.sendall(f"hello {process_id}\n".encode())
        self._thread = threading.Thread(target=self._read, name="nxpy-distributed-watch",
                                        daemon=True)
        self._thread.start()

    def _read(self):
        buf = b""
        while True:
            try:
                data = self._sock.recv(4096)
            except OSError:
                data = b""
            if not data:
                self._lose(None, "its connection closed")
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                word, _, rest = line.decode("utf-8", "replace").partition(" ")
                if word == "lost" and not self._closing:
                    who, _, reason = rest.partition(" ")
                    if self._lose(int(who), reason):
                        return

    def _lose(self, process, reason) -> bool:
        with self._lock:
            if self._closing or self.lost is not None:
                return True
            self.lost = -1 if process is None else process
            self.message = self._describe(process, reason)
            self.lost_event.set()
            if not self.exiting and not self._sync:
                _set_async(self._main, self._error)
        if not self.taken_event.wait(GRACE):
            with self._lock:
                if self._closing:
                    return True
                os.write(2, (f"{self.message}\nnxpy.distributed: the main thread did not "
                             f"return to Python within {GRACE:g} s (it is blocked in the "
                             f"runtime), so this process ends now with exit status "
                             f"{EXIT_STATUS}\n").encode())
                os._exit(EXIT_STATUS)
        return True

    def wait_lost(self, timeout: float) -> bool:
        """Whether a process is (or within ``timeout`` seconds becomes) lost; the main
        thread waiting here gets no asynchronous error: it raises the error itself."""
        main = threading.get_ident() == self._main
        with self._lock:
            self._sync += main
            if main and self.lost is not None and not self.taken_event.is_set():
                _set_async(self._main, None)  # the caller raises it: no second copy
        try:
            return self.lost_event.wait(timeout)
        finally:
            with self._lock:
                self._sync -= main

    def taken(self) -> None:
        """The main thread has the error: no second copy, no forced exit."""
        with self._lock:
            if self.taken_event.is_set():
                return
            self.taken_event.set()
            if threading.get_ident() == self._main:
                _set_async(self._main, None)

    def close(self) -> None:
        """Leaves: ``fail`` when :attr:`failed` is set, else ``bye``. The connection itself
        stays open until the process ends (the kernel closes it): the hub, and the
        coordination service beside it, outlive every process's runtime client, which
        would abort its process if the service went away first."""
        with self._lock:
            self._closing = True
        try:
            self._sock.sendall(f"fail {self.failed}\n".encode() if self.failed else b"bye\n")
        except OSError:
            pass
