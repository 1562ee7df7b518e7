"""gamma and the distributions drawn through it (issue 28, part 4)."""
from __future__ import annotations

__all__: list[str] = []
