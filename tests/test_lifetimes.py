"""How long host callbacks (hook, print_value) and their executables live on EXLA: a
callback stays registered while anything that can still run or compile its program
holds it (a Jit's caches, a Compiled program, a kept ``run``, the module text, which
holds its executables: the process-wide executable cache does not) and is freed with
the last of them; which
executables wait for their callbacks is known from the executable itself, never from an
``id()`` a freed executable may pass on. Oracles: weak references to what a hook's
closure holds, the values the hooks receive (NumPy), the registry's size."""
import gc
import weakref

import numpy as np
import pytest

import nxpy as nx
from nxpy import pjrt
from nxpy.cache import LockedCache
from nxpy.compilers import exla
from nxpy.defn import compile as defn_compile
from nxpy.defn import jit

from helpers import FULL_PRODUCT


class Payload:
    """Something large a hook's closure holds (what must not outlive the program)."""

    def __init__(self):
        self.data = np.zeros(1 << 16)


def recording(log, payload):
    """A hook logging the values it gets and holding ``payload`` in its closure."""
    def hook(t):
        log.append((t.tolist(), payload.data.size))
    return hook


def hooked(log, payload, k=2.0):
    """``x * k + 1`` with a hook on ``x * k`` (a new hook function per call)."""
    fn = recording(log, payload)

    def f(x):
        return nx.hook(x * k, fn) + 1
    return f


@pytest.fixture
def executables(monkeypatch):
    """A process-wide executable cache of this test's own (the others' programs stay in
    theirs), emptied by the test when it drops its programs."""
    cache = LockedCache(pjrt.compiler._EXECUTABLES.maxsize)
    monkeypatch.setattr(pjrt.compiler, "_EXECUTABLES", cache)
    return cache


def registered() -> int:
    gc.collect()  # what earlier tests dropped goes first
    return len(pjrt._callbacks)


X = np.array([1.0, -2.0, 3.0], np.float32)


def test_dropping_a_jit_frees_its_hooks_and_what_they_hold(executables):
    before = registered()
    log, payload = [], Payload()
    held = weakref.ref(payload)
    f = jit(hooked(log, payload), compiler="exla")
    np.testing.assert_allclose(f(nx.tensor(X)).to_numpy(), X * 2 + 1)
    assert log == [((X * 2).tolist(), 1 << 16)]
    assert len(pjrt._callbacks) == before + 1
    del f, payload
    gc.collect()  # the process-wide executable cache never holds programs with callbacks
    assert held() is None, "the hook's closure outlived every program that could call it"
    assert len(executables) == 0
    assert len(pjrt._callbacks) == before


def test_print_value_programs_free_their_registration(executables, capsys):
    before = registered()
    f = jit(lambda x: nx.print_value(x + 1, label="lifetimes-pv"), compiler="exla")
    f(nx.tensor(X))
    assert "lifetimes-pv" in capsys.readouterr().out
    assert len(pjrt._callbacks) == before + 1
    del f
    executables.clear()
    assert registered() == before


def test_a_live_jit_keeps_its_hooks_working(executables):
    log, payload = [], Payload()
    f = jit(hooked(log, payload), compiler="exla")
    f(nx.tensor(X))
    executables.clear()  # only the Jit's caches hold the program now
    gc.collect()
    np.testing.assert_allclose(f(nx.tensor(X + 1)).to_numpy(), (X + 1) * 2 + 1)
    f(X - 1)  # NumPy arguments: another hot path, the same program
    assert [v for v, _ in log] == [(X * 2).tolist(), ((X + 1) * 2).tolist(),
                                   ((X - 1) * 2).tolist()]


def test_a_compiled_program_and_a_kept_run_keep_their_hooks(executables):
    log, payload = [], Payload()
    held = weakref.ref(payload)
    c = defn_compile(hooked(log, payload, 3.0), nx.template((3,), "f32"), compiler="exla")
    del payload
    executables.clear()
    gc.collect()
    assert held() is not None
    np.testing.assert_allclose(c(nx.tensor(X)).to_numpy(), X * 3 + 1)
    assert log == [((X * 3).tolist(), 1 << 16)]
    del c
    gc.collect()
    assert held() is None


def test_module_text_keeps_its_callbacks_until_dropped(executables):
    """The lowered text names its callbacks by key: compiling it again after its
    executable went still finds them (the text holds them), until the text goes too."""
    before = registered()
    log, payload = [], Payload()
    held = weakref.ref(payload)
    text = exla.to_mlir(hooked(log, payload, 5.0), nx.template((3,), "f32"))
    del payload
    for _ in range(2):  # compiled, dropped, compiled again from the same text
        exe = pjrt.compile(text, [0])
        assert pjrt.is_synchronous(exe)
        out = pjrt.executor(exe, [((3,), np.float32)], 0)([pjrt.to_device(X, 0)])
        np.testing.assert_allclose(pjrt.to_host(out[0]), X * 5 + 1)
        del exe, out
        executables.clear()
        gc.collect()
        assert held() is not None
    assert [v for v, _ in log] == [(X * 5).tolist()] * 2
    plain = str(text)  # a copy: it names the keys but holds nothing
    assert plain == text
    del text
    gc.collect()
    assert held() is None and len(pjrt._callbacks) == before
    # what the copy names is gone: a clear error, not a KeyError from XLA's thread
    exe = pjrt.compile(plain, [0])
    with pytest.raises(Exception, match="no longer registered") as e:
        pjrt.to_host(pjrt.executor(exe, [((3,), np.float32)], 0)([pjrt.to_device(X, 0)])[0])
    assert "KeyError" not in str(e.value)


def test_no_executable_inherits_the_flag_of_an_evicted_one(monkeypatch):
    """With a one-entry executable cache, each hooked executable is freed as the next
    program compiles; the next plain executable must not be taken for a synchronous one
    (``id()`` of a freed executable is often the next one's)."""
    monkeypatch.setattr(pjrt.compiler, "_EXECUTABLES", LockedCache(maxsize=1))
    log, payload = [], Payload()
    wrong = []
    for i in range(30):
        text = exla.to_mlir(hooked(log, payload, float(i)), nx.template((2,), "f32"))
        assert pjrt.is_synchronous(pjrt.compile(text, [0]))
        del text
        plain = pjrt.compile(exla.to_mlir(lambda x, i=i: x * float(i) - 1,
                                          nx.template((2,), "f32")), [0])
        if pjrt.is_synchronous(plain) or pjrt.dispatcher(
                plain, [((2,), np.float32)], [((2,), np.float32)], 0) is None:
            wrong.append(i)
        # and it runs (the hooked programs were never called: their hooks neither)
        out = pjrt.executor(plain, [((2,), np.float32)], 0)([pjrt.to_device(X[:2], 0)])
        np.testing.assert_allclose(pjrt.to_host(out[0]), X[:2] * i - 1)
    assert wrong == [] and log == []


# The soak's size: programs, the process-wide cache's entries, calls between collections.
# The fast slice shows the same bound with fewer programs, the bound lowered with them: 30
# programs against a bound of 2 + 5 (unbounded, the registry would hold 30).
SOAK = (200, 8, 20) if FULL_PRODUCT else (30, 2, 5)


def test_compiling_many_hooked_programs_keeps_the_registry_bounded(monkeypatch):
    """A soak: ``n`` distinct hooked programs (200 under `make exhaustive`), each dropped
    after its call; the registry holds the callbacks of the programs not yet collected, not
    of all ``n`` (and the process-wide cache, ``size`` entries here, holds none of them)."""
    n, size, every = SOAK
    assert n > size + every, "the bound must be below what an unbounded registry holds"
    cache = LockedCache(maxsize=size)
    monkeypatch.setattr(pjrt.compiler, "_EXECUTABLES", cache)
    before = registered()
    payloads = weakref.WeakSet()
    peak = 0
    for i in range(n):
        log, payload = [], Payload()
        payloads.add(payload)
        f = jit(hooked(log, payload, float(i)), compiler="exla")
        f(nx.tensor(X))
        assert log == [((X * float(i)).tolist(), 1 << 16)]
        del f, payload
        if i % every == every - 1:
            gc.collect()
        peak = max(peak, len(pjrt._callbacks) - before)
    # without collections, what a dropped Jit holds may wait for the next one
    assert peak <= size + every, f"{peak} callbacks registered at once for {size} cached programs"
    cache.clear()
    assert registered() == before and len(payloads) == 0


def test_dropping_a_jit_frees_its_runtime_calls_and_what_they_hold(executables):
    """runtime_call's host function is registered like a hook's: with its program."""
    before = registered()
    payload = Payload()
    held = weakref.ref(payload)

    # (pyflakes' F821: both names are deleted below, after the calls)
    def host(t):  # holds payload
        return (t.to_numpy() * 2 + payload.data[0]).astype(np.float32)  # noqa: F821
    f = jit(lambda x: nx.runtime_call(x, x, host) + 1, compiler="exla")  # noqa: F821
    np.testing.assert_allclose(f(nx.tensor(X)).to_numpy(), X * 2 + 1)
    assert len(pjrt._callbacks) == before + 1
    del f, payload, host
    gc.collect()
    assert held() is None, "the runtime_call's function outlived every program that could call it"
    assert len(pjrt._callbacks) == before
