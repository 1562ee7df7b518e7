"""statistics (issue 28, part 1): see the package docstring."""
from __future__ import annotations

__all__: list[str] = []
