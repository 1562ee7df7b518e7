"""jax.random's distributions that are transformations of uniform or normal draws (issue 28,
part 4)."""
from __future__ import annotations

__all__: list[str] = []
