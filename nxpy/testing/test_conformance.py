"""The kit itself: ``pytest --pyargs nxpy.testing --nxpy-backend=NAME``."""
import pytest

from nxpy.testing import Unsupported, check
from nxpy.testing.plugin import record_unsupported


def test_op(nxpy_case, nxpy_target):
    try:
        check(nxpy_case, nxpy_target)
    except Unsupported as e:
        record_unsupported(nxpy_target, nxpy_case.op, str(e))
        pytest.skip(f"unsupported: {e}")
