"""Test session set-up: start nxpy's XLA client (8 host CPU devices) before any test
uses jax as an oracle, so both share one client with enough devices; on a slice of the
suite (``make test SLICE=1`` or ``SLICE=3``), leave out half of each parametrized test's
cases."""
import re
import zlib

import numpy as np
import pytest

import nxpy as nx
from helpers import FULL_PRODUCT, TEST_SLICE, in_half
from nxpy import pjrt

pjrt.devices()

#: run whole on the legs' slices (1 and 3): modules whose subject is jax or jaxlib itself,
#: whose results change with its version (importing the programs it emits, to_jax and
#: from_jax, its random bits, what differs between jaxlib releases, its CUDA lowering, its
#: buffer assignment, its sharding objects, jax.numpy's and jax.nn's names and semantics:
#: sinc and cross changed between 0.10 and 0.12, tests/test_numpy_math.py). The round
#: trip's slice (2) halves them too
WHOLE_MODULES = {
    "test_stablehlo_jax.py", "test_interop.py", "test_interop_optax.py",
    "test_interop_transforms.py", "test_random.py", "test_random_distributions.py",
    "test_random_gamma.py", "test_nn_initializers.py", "test_versions.py",
    "test_xla_crashes.py", "test_cuda_lowering.py", "test_memory_stats.py",
    "test_checkpoint.py", "test_partition_spec.py", "test_sharded_tensors.py",
    "test_numpy.py", "test_numpy_math.py"}
#: ... and tests of this name elsewhere: jax's programs imported (its corpus, its recorded
#: and exported modules), exact bits, jax's signatures. A test comparing values with JAX as
#: an oracle of the math is halved like one comparing with NumPy: each leg runs a half
WHOLE_TESTS = re.compile(r"import|corpus|recorded|programs?_load|exported|bits|signature")


#: the half of each test's cases a slice takes (``in_half``'s parity): CI's two legs
#: (slices 1 and 3) opposite ones; the round trip (2) the oldest leg's
_PARITY = {1: 1, 2: 0, 3: 0}

#: pytest.param's class, for the values of a parametrize mark
_PARAM = type(pytest.param())
_ABSENT = object()


def _indices(item, ordinal):
    """The case's index in each of its test's ``parametrize`` marks (found by identity:
    pytest's own ``callspec.indices`` number the combinations); where parameters come from
    elsewhere (a hook's ``metafunc.parametrize``, a fixture's params), a number drawn from
    its id, so that the legs' opposite halves stay complementary when the list of its
    test's cases differs between slices (the conformance kit's EXLA eager share)."""
    spec = getattr(item, "callspec", None)
    if spec is None:
        return [ordinal]
    ordinal = zlib.crc32(spec.id.encode())
    indices, named = [], set()
    for mark in item.iter_markers("parametrize"):
        names = mark.args[0].split(",") if isinstance(mark.args[0], str) else mark.args[0]
        names = [n.strip() for n in names]
        got = tuple(spec.params.get(n, _ABSENT) for n in names)
        sets = [tuple(v.values) if isinstance(v, _PARAM) else
                (v,) if len(names) == 1 else tuple(v) for v in mark.args[1]]
        found = [k for k, v in enumerate(sets) if len(v) == len(got)
                 and all(a is b for a, b in zip(v, got))]
        if not found:
            return [ordinal]
        indices.append(found[0])
        named.update(names)
    return indices if named >= set(spec.params) else [ordinal]


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(config, items):
    """On slice ``TEST_SLICE`` (1: CI's newest leg; 3: its oldest; 2: ``make roundtrip``),
    each test function (but, on the legs' slices, ``WHOLE_MODULES`` and ``WHOLE_TESTS``)
    runs the half of its cases ``in_half`` of the slice's parity picks (at least one):
    every value of every parameter of a test of two parameters or more. The two legs take
    opposite halves, so CI runs every case once and the tests of jax's own behaviour on
    both jax versions; with ``covering``'s rotation started ``TEST_SLICE`` choices on,
    they meet more pairs of a covered product than one run does."""
    if not TEST_SLICE or FULL_PRODUCT:
        return
    if TEST_SLICE not in _PARITY:
        raise pytest.UsageError(f"NXPY_TEST_SLICE (make test SLICE=...) must be 0 (every case) "
                                f"or one of {sorted(_PARITY)}, got {TEST_SLICE}")
    whole, parity = TEST_SLICE in (1, 3), _PARITY[TEST_SLICE]
    cases: dict = {}
    for item in items:
        cases.setdefault((item.path, getattr(item, "originalname", item.name)), []).append(item)
    taken = set()
    for (path, name), its in cases.items():
        if whole and (path.name in WHOLE_MODULES or WHOLE_TESTS.search(name)):
            taken.update(map(id, its))
            continue
        half = [it for k, it in enumerate(its) if in_half(_indices(it, k), parity)]
        taken.update(map(id, half or its[:1]))
    left = [item for item in items if id(item) not in taken]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if id(item) in taken]


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
