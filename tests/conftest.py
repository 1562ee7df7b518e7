"""Test session set-up: start nxpy's XLA client (8 host CPU devices) before any test
uses jax as an oracle, so both share one client with enough devices."""
import numpy as np
import pytest

import nxpy as nx
from nxpy import pjrt

pjrt.devices()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _numpy_default():
    """Every test starts (and leaves) with the NumPy backend as the default."""
    old = nx.default_backend("numpy")
    try:
        yield
    finally:
        nx.default_backend(old)


@pytest.fixture
def compiles(monkeypatch):
    """The MLIR texts XLA compiles (or loads from the persistent cache) during the test:
    ``pjrt.compile``'s cache misses. The process-wide executable cache is set aside for
    the test, so a program an earlier test compiled counts again."""
    calls = []
    real = pjrt.compiler._compile_or_load

    def counting(text, *a, **k):
        calls.append(text)
        return real(text, *a, **k)
    # patched where they are defined: pjrt.compile looks them up in nxpy.pjrt.compiler
    monkeypatch.setattr(pjrt.compiler, "_compile_or_load", counting)
    monkeypatch.setattr(pjrt.compiler, "_EXECUTABLES", type(pjrt.compiler._EXECUTABLES)())
    return calls
