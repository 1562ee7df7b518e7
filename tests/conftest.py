"""Test session set-up: start nxpy's XLA client (8 host CPU devices) before any test
uses jax as an oracle, so both share one client with enough devices."""
import numpy as np
import pytest

from nxpy.backends.exla import pjrt

pjrt.devices()


@pytest.fixture
def rng():
    return np.random.default_rng(0)
