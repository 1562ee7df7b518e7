"""``python -m nxpy.launch``: runs one script as several processes of one distributed
nxpy program.

On one machine (loopback; a free port is chosen)::

    python -m nxpy.launch -n 2 --local-devices 2 script.py args...

On real hosts, once per host (the same command everywhere but ``--process-id``)::

    python -m nxpy.launch -n 2 --coordinator host0:5432 --process-id 0 script.py args...

Each process gets ``NXPY_COORDINATOR``, ``NXPY_NUM_PROCESSES``, ``NXPY_PROCESS_ID`` (and
``NXPY_LOCAL_DEVICES`` when ``--local-devices`` is given) in its environment, from which
nxpy initializes its distributed runtime when its XLA client starts (or when the script
calls ``nxpy.distributed.initialize()``). Each line of output is prefixed with the
process index (``[0] ...``). When one process fails, the launcher stops the others (its
own children only: terminate, then kill after a grace period) and exits with the failed
process's status; ``--timeout`` bounds the whole run.

This module uses only the standard library (it starts Python processes; it never starts
XLA itself).
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

__all__ = ["main", "free_port"]

GRACE = 5.0  # seconds between terminate and kill


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _parser():
    p = argparse.ArgumentParser(prog="python -m nxpy.launch",
                                description="Run a script as N processes of one distributed "
                                            "nxpy program.")
    p.add_argument("-n", "--num-processes", type=int, required=True,
                   help="number of processes in the whole program")
    p.add_argument("--local-devices", type=int, default=None,
                   help="devices per process (CPU: host devices; default NXPY_CPU_DEVICES or 8)")
    p.add_argument("--coordinator", default=None,
                   help="host:port of process 0 (real hosts); default: 127.0.0.1 and a free "
                        "port, all N processes started here")
    p.add_argument("--process-id", type=int, default=None,
                   help="with --coordinator: the one process to start here")
    p.add_argument("--timeout", type=float, default=None,
                   help="stop everything and fail after this many seconds")
    p.add_argument("script", help="the Python script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def _pump(stream, prefix: str, out, lock):
    for line in iter(stream.readline, b""):
        with lock:
            out.write(prefix.encode() + line if line.endswith(b"\n") else
                      prefix.encode() + line + b"\n")
            out.flush()
    stream.close()


def _stop(procs):
    """Terminate our children (each leads its own process group), then kill stragglers."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
    deadline = time.monotonic() + GRACE
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            p.wait()


def main(argv=None) -> int:
    a = _parser().parse_args(argv)
    n = a.num_processes
    if n < 1:
        _parser().error(f"-n must be at least 1, got {n}")
    if a.coordinator is None:
        if a.process_id is not None:
            _parser().error("--process-id needs --coordinator (on one machine the launcher "
                            "starts every process itself)")
        address, ids = f"127.0.0.1:{free_port()}", list(range(n))
    else:
        if a.process_id is None or not 0 <= a.process_id < n:
            _parser().error(f"--coordinator needs --process-id in [0, {n})")
        address, ids = a.coordinator, [a.process_id]
    cmd_tail = [a.script, *a.args]
    procs, threads = [], []
    lock = threading.Lock()
    out = sys.stdout.buffer
    for i in ids:
        env = dict(os.environ, NXPY_COORDINATOR=address, NXPY_NUM_PROCESSES=str(n),
                   NXPY_PROCESS_ID=str(i), PYTHONUNBUFFERED="1")
        if a.local_devices is not None:
            env["NXPY_LOCAL_DEVICES"] = str(a.local_devices)
        p = subprocess.Popen([sys.executable, "-u", *cmd_tail], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        procs.append(p)
        t = threading.Thread(target=_pump, args=(p.stdout, f"[{i}] ", out, lock), daemon=True)
        t.start()
        threads.append(t)
    start = time.monotonic()
    status = 0
    try:
        while True:
            codes = [p.poll() for p in procs]
            failed = [(i, c) for i, c in zip(ids, codes) if c not in (None, 0)]
            if failed:
                i, c = failed[0]
                _stop(procs)
                with lock:
                    sys.stderr.write(f"nxpy.launch: process {i} failed (exit status {c}); "
                                     f"stopped the others\n")
                status = c if c > 0 else 128 - c
                break
            if all(c == 0 for c in codes):
                break
            if a.timeout is not None and time.monotonic() - start > a.timeout:
                _stop(procs)
                with lock:
                    sys.stderr.write(f"nxpy.launch: timed out after {a.timeout:g} s; stopped "
                                     f"every process\n")
                status = 124
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        _stop(procs)
        status = 130
    for t in threads:
        t.join(timeout=2)
    return status


if __name__ == "__main__":
    sys.exit(main())
