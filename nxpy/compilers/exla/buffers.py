"""The EXLA backend's data: a tensor on one device holds a PJRT buffer; a per-device
result of a sharded program holds a :class:`Piece` of the one global array the program
returned (a :class:`GlobalResult`), split off only when the piece is used on its own."""
from __future__ import annotations

from ... import pjrt
from ...tensor import Deferred

__all__ = ["GlobalResult", "Piece"]


class GlobalResult:
    """One result of a sharded program: a global array over the mesh (``sharding`` is its
    cached sharding object). Its per-partition buffers are split off once, when a
    :class:`Piece` of it is first used on its own."""

    __slots__ = ("array", "sharding", "_pieces")

    def __init__(self, array, sharding):
        self.array, self.sharding, self._pieces = array, sharding, None

    def pieces(self) -> list:
        if self._pieces is None:
            self._pieces = pjrt.shards_of(self.array)
        return self._pieces


class Piece(Deferred):
    """Partition ``p``'s data of a :class:`GlobalResult`: what a per-device result tensor
    holds until read. Passed back whole (every partition's piece, in order, where the
    same sharding is expected) it goes into the next program as the global array it is,
    with no splitting and no reassembly. Until resolved, a piece keeps the whole global
    array (every partition's buffer) alive."""

    __slots__ = ("whole", "p")

    def __init__(self, whole: GlobalResult, p: int):
        self.whole, self.p = whole, p

    def resolve(self):
        return self.whole.pieces()[self.p]
