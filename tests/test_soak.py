"""Soak tests (``make soak``; ``make test`` leaves them out): many threads calling jitted
functions, 100,000 calls without memory growth, 1,000 distinct shapes through one
function (the program caches stay bounded), and Ctrl-C in the middle of a call.

Memory and interrupts are measured in a fresh process each (RSS from /proc/self/status;
an interrupt that arrived late must not stop the test session)."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import nxpy as nx
from nxpy import telemetry
from nxpy.defn import jit

pytestmark = pytest.mark.soak

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code, env=None, timeout=240):
    """Runs ``code`` in a fresh Python; returns its stdout (fails on a non-zero exit)."""
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
             **(env or {}))
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=e, cwd=ROOT, timeout=timeout)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


def _delta(before, keys=("trace", "compile")):
    after = telemetry.counters()
    return {k: after.get(k, 0) - before.get(k, 0) for k in keys}


def _hammer(n_threads, calls, job):
    errors, start = [], threading.Barrier(n_threads)

    def worker(t):
        try:
            start.wait()
            for i in range(calls):
                job(t, i)
        except BaseException as e:  # reported below
            errors.append((t, repr(e)))
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[:3]


@pytest.mark.parametrize("compiler", ["exla", "evaluator"])
def test_16_threads_1000_calls_of_one_function_compile_it_once(compiler):
    def soak_same(x, y):
        return x * 3.25 - y

    before = telemetry.counters()
    f = jit(soak_same, compiler=compiler)
    xs = [nx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) + t) for t in range(16)]
    y = nx.tensor(np.ones((2, 3), np.float32))

    def job(t, i):
        r = f(xs[t], y).to_numpy()
        if i % 100 == 0:  # reading every result would measure the host copies
            np.testing.assert_array_equal(r, xs[t].to_numpy() * 3.25 - 1)
    _hammer(16, 1000, job)
    d = _delta(before)
    assert d["trace"] == 1, d
    assert d["compile"] == (1 if compiler == "exla" else 0), d


def test_16_threads_1000_calls_of_different_functions_compile_each_once():
    def make(k):
        def soak_fn(x):
            return nx.sum(x * (k + 0.0625)) + k
        return soak_fn
    before = telemetry.counters()
    fns = [jit(make(k), compiler="exla") for k in range(8)]
    x = nx.tensor(np.arange(4, dtype=np.float32))

    def job(t, i):
        k = (t + i) % 8
        r = float(fns[k](x).to_numpy())
        assert r == 6 * (k + 0.0625) + k, (k, r)
    _hammer(16, 1000, job)
    assert _delta(before) == {"trace": 8, "compile": 8}


_RSS = """
import gc, numpy as np, nxpy as nx
from nxpy.defn import jit

def rss_kb():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))

f = jit(lambda x, y: x * 2.0 + y, compiler={compiler!r})
x, y = nx.tensor(np.ones(16, np.float32)), nx.tensor(np.arange(16, dtype=np.float32))
for _ in range(20000):  # warm up: allocator pools, caches
    r = f(x, y)
gc.collect()
start = rss_kb()
for i in range(100000):
    r = f(x, y)
    if i % 10000 == 0:
        assert r.to_numpy()[3] == 5.0
gc.collect()
print(rss_kb() - start)
"""


@pytest.mark.parametrize("compiler", ["exla", "evaluator"])
def test_100000_calls_do_not_grow_memory(compiler):
    growth_kb = int(_run(_RSS.format(compiler=compiler)).split()[-1])
    assert growth_kb < 10 * 1024, f"RSS grew by {growth_kb} kB over 100,000 calls"


def test_1000_shapes_through_one_function_keep_the_caches_bounded():
    # the Evaluator for the 1,000 shapes (a trace each), EXLA for enough shapes to fill
    # the process-wide executable table (8 x 16) as well
    out = _run("""
        import warnings, numpy as np, nxpy as nx
        from nxpy import pjrt, telemetry
        from nxpy.defn import jit
        from nxpy.defn.core import PROGRAMS
        warnings.simplefilter("ignore")  # the retrace warning: shapes change on purpose

        def shapes(x):
            return nx.sum(x * 2, axes=[0])
        for compiler, n_shapes in (("evaluator", 1000), ("exla", 150)):
            f = jit(shapes, compiler=compiler)
            for n in range(1, n_shapes + 1):
                r = f(nx.tensor(np.ones((n, 2), np.float32)))
                assert r.to_numpy().tolist() == [2.0 * n, 2.0 * n], n
            before = telemetry.counters()["trace"]
            assert f(nx.tensor(np.ones((1, 2), np.float32))).to_numpy().tolist() == [2.0, 2.0]
            # the first shape was dropped: traced again
            print(len(f._fast), telemetry.counters()["trace"] - before)
        print(len(PROGRAMS.of(shapes)), len(pjrt.compiler._EXECUTABLES))
        """, env={"NXPY_PROGRAM_CACHE_SIZE": "16"})
    (ev_fast, ev_retraced), (ex_fast, ex_retraced), (programs, executables) = \
        [tuple(map(int, line.split())) for line in out.split("\n") if line]
    assert ev_fast <= 16 and ex_fast <= 16 and programs <= 16, out
    assert executables <= 8 * 16, out
    assert ev_retraced == ex_retraced == 1, out


def test_keyboard_interrupt_leaves_the_process_usable():
    out = _run("""
        import threading, time, _thread, numpy as np, nxpy as nx
        from nxpy.defn import jit, while_loop

        def count(n):
            return while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 1.0),
                              (0, nx.tensor(1.0)))[0]
        slow = jit(count, compiler="evaluator")
        assert slow(nx.tensor(3)).tolist() == 3

        # 1. Ctrl-C in the middle of a long Evaluator while_loop
        threading.Timer(0.5, _thread.interrupt_main).start()
        t0 = time.monotonic()
        try:
            slow(nx.tensor(10**9))
            raise SystemExit("the loop was not interrupted")
        except KeyboardInterrupt:
            pass
        print("interrupted after", round(time.monotonic() - t0, 1), "s")
        assert slow(nx.tensor(5)).tolist() == 5

        # 2. Ctrl-C while the function is being traced (first call): nothing half-built stays
        hit = []
        def traced(x):
            if not hit:
                hit.append(1)
                raise KeyboardInterrupt
            return x + 1
        g = jit(traced, compiler="exla")
        try:
            g(nx.tensor([1, 2]))
        except KeyboardInterrupt:
            pass
        assert g(nx.tensor([1, 2])).tolist() == [2, 3]

        # 3. Ctrl-C at an arbitrary point of a stream of EXLA calls, from another thread
        h = jit(lambda x: x * 2, compiler="exla")
        x = nx.tensor(np.arange(8, dtype=np.float32))
        for delay in (0.05, 0.11, 0.23):
            threading.Timer(delay, _thread.interrupt_main).start()
            try:
                while True:
                    h(x)
            except KeyboardInterrupt:
                pass
            assert h(x).tolist() == list(range(0, 16, 2))
            assert jit(lambda x: x - 1, compiler="exla")(x).tolist()[:2] == [-1.0, 0.0]
        print("ok")
        """)
    assert out.strip().endswith("ok"), out
