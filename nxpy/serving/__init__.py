"""Serving batched functions to concurrent callers (Nx's ``Nx.Serving`` and
``Nx.Batch``; docs/serving.md): :class:`Batch` gathers examples, :class:`Serving` merges
the batches of concurrent callers into batches of one compiled size, runs them on a
batching thread per device and hands each caller its rows; :func:`stream` streams values
from inside the function to the callers; ``python -m nxpy.serving.http`` serves one over
HTTP (the optional extra ``nxpy[serving]``).

>>> import nxpy as nx
>>> from nxpy.serving import Batch, Serving
>>> s = Serving(lambda x: x.sum(axis=1), batch_size=4, compiler="exla")
>>> s.run(Batch.stack([nx.tensor([1, 2]), nx.tensor([3, 4])])).tolist()
[3, 7]
"""
from .batch import Batch, Template
from .core import Serving, ServingError, ServingStopped, stream

__all__ = ["Batch", "Template", "Serving", "ServingError", "ServingStopped", "stream"]
