"""The supported jax/jaxlib range (issue 25): declared once in pyproject.toml, checked at
start-up, and every version-dependent jaxlib call chosen by the running version in
``nxpy.pjrt.differences`` (one test per difference)."""
import re
import sys
from pathlib import Path

import jax
import jaxlib
import numpy as np
import pytest

import nxpy as nx
from nxpy import pjrt

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = (ROOT / "pyproject.toml").read_text()


def _spec(version):
    return ".".join(map(str, version))


def test_pyproject_declares_the_range_nxpy_checks():
    lo, hi = pjrt.SUPPORTED
    for name in ("jax", "jaxlib"):
        assert f'"{name}>={_spec(lo)},<{_spec(hi)}"' in PYPROJECT, name


def test_requires_python_covers_the_tested_pythons():
    m = re.search(r'requires-python = ">=3\.(\d+),<3\.(\d+)"', PYPROJECT)
    assert m, "requires-python must name the lowest and the first unsupported Python"
    lo, hi = int(m.group(1)), int(m.group(2))
    # the CI legs: Python 3.11 (jax 0.10.2) and 3.12 (the newest jax)
    assert lo == 11 and hi > 12
    assert lo <= sys.version_info[1] < hi


def test_the_running_versions_are_supported():
    pjrt.check_versions(jax.__version__, jaxlib.__version__)
    assert pjrt.jaxlib_version() == jaxlib.__version__


@pytest.mark.parametrize("jax_v, jaxlib_v", [("0.10.2", "0.10.2"), ("0.11.2", "0.11.2"),
                                              ("0.12.0.1", "0.12.0.1"), ("0.12.0", "0.12.0"),
                                              ("0.12.0.1", "0.12.0"), ("0.11.0rc1", "0.11.0")])
def test_inside_the_range(jax_v, jaxlib_v):
    pjrt.check_versions(jax_v, jaxlib_v)


@pytest.mark.parametrize("jax_v, jaxlib_v", [("0.10.1", "0.10.1"), ("0.12.1", "0.12.1"),
                                              ("0.13.0", "0.13.0"), ("0.4.38", "0.4.38"),
                                              ("1.0.0", "1.0.0"), ("0.11.2", "0.12.0.1")])
def test_outside_the_range_is_a_clear_error(jax_v, jaxlib_v):
    with pytest.raises(ImportError) as e:
        pjrt.check_versions(jax_v, jaxlib_v)
    msg = str(e.value)
    assert f"found jax {jax_v} and jaxlib {jaxlib_v}" in msg
    assert "pip install 'jax>=0.10.2,<0.12.1'" in msg


class _Options:
    def SerializeAsString(self):
        return b"options"


def test_cache_key_uses_the_running_jaxlib(monkeypatch):
    devs = pjrt.devices()[:1]
    one = pjrt._digest("module", _Options(), devs)
    assert one == pjrt._digest("module", _Options(), devs)
    monkeypatch.setattr(pjrt.lib, "jaxlib_version", lambda: "0.99.0")
    assert pjrt._digest("module", _Options(), devs) != one


# ----------------------------------------------------------------------------------------
# One test per row of pjrt.DIFFERENCES
# ----------------------------------------------------------------------------------------
def test_every_difference_is_tested():
    tested = {name[len("test_difference_"):] for name in globals()
              if name.startswith("test_difference_")}
    assert tested == set(pjrt.DIFFERENCES)


def test_difference_result_handler():
    """jaxlib 0.11 dropped ``array_result_handler``'s 4th argument (``_skip_checks``):
    the signature nxpy calls is the running jaxlib's, and the handler it builds wraps an
    executable's buffers."""
    from jaxlib import _jax
    first, _ = pjrt.DIFFERENCES["result_handler"]
    new = pjrt._version(jaxlib.__version__) >= first
    assert ("_skip_checks" in _jax.array_result_handler.__doc__) is not new
    aval = jax.core.ShapedArray((3,), np.float32)
    sharding = jax.sharding.SingleDeviceSharding(pjrt.devices()[0])
    assert pjrt.differences(_jax, pjrt._version(jaxlib.__version__))["result_handler"](
        aval, sharding) is not None
    if new:  # the old call fails against this jaxlib: the choice is not cosmetic
        with pytest.raises(TypeError):
            pjrt.differences(_jax, (0, 10, 2))["result_handler"](aval, sharding)
    # and the chosen one runs every EXLA program
    f = nx.defn.jit(lambda x: x * 2 + 1, compiler="exla")
    assert f(nx.tensor([1.0, 2.0, 3.0])).tolist() == [3.0, 5.0, 7.0]
