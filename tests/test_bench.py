"""Every benchmark of bench/ sets up and runs each side once, checking its results
(the setups compare nxpy with JAX before anything is timed), so a change to nxpy's API
cannot leave a benchmark broken until someone next runs ``make bench``. Nothing here is
timed: tests never assert timings. A soak test (``make soak``): the setups compile large
programs."""
import pytest

import nxpy  # noqa: F401 - nxpy first: it starts XLA with its device count
from nxpy import pjrt

import bench
from bench import core

CASES = bench.load_cases()


@pytest.mark.soak
@pytest.mark.parametrize("name", list(CASES))
def test_benchmark_sets_up_and_runs(name):
    case = CASES[name]
    if case.devices > len(pjrt.devices()):
        pytest.skip(f"needs {case.devices} devices")
    try:
        pair = case.setup(core.Config.make(quick=True))
    except core.Skip as why:
        pytest.skip(str(why))
    assert isinstance(pair, core.Pair)
    pair.nxpy()
    pair.jax()
