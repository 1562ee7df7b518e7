"""A slice of the differential fuzzer with the iree compiler as one more path, and a
slice of the conformance kit run in-process (the whole kit: ``make iree-kit``)."""
import pytest

from nxpy import testing
from nxpy.testing import fuzz

import nxpy_iree


def test_fuzzer_takes_the_plugin_compiler():
    before = len(nxpy_iree._COMPILED)
    found = fuzz.run_many(0, 1, vmap_every=0, compilers=("iree",))
    assert found == []
    assert len(nxpy_iree._COMPILED) >= before + 1  # the iree path did compile


# one case of a few families of the op set, chosen for breadth at low cost (fft: declared
# unsupported, refused before IREE compiles)
SLICE = ("conv", "window_scatter_max", "sort", "gather", "fft")


@pytest.mark.parametrize("op", SLICE)
def test_kit_slice(op):
    case = next((c for c in testing.CASES if c.op == op), None)
    if case is None:
        pytest.skip(f"no kit case for {op}")
    if op in nxpy_iree.UNSUPPORTED:
        with pytest.raises(testing.Unsupported, match=f"nxpy-iree plugin .* op '{op}'"):
            testing.check(case, ("compiler", "iree"))
    else:
        testing.check(case, ("compiler", "iree"))
