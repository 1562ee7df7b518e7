"""nxpy.numpy.linalg: jax.numpy.linalg's names (issue 28, part 1)."""
from __future__ import annotations

__all__: list[str] = []
