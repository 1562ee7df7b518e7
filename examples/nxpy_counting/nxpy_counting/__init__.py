"""An example nxpy plugin (see docs/plugins.md in nxpy).

* ``CountingBackend``: an eager backend that wraps nxpy's NumPy backend and counts how
  many times each op runs — the smallest useful Backend: it inherits the op kernels and
  adds behaviour around them.
* ``CountingCompiler``: a compiler that runs defn graphs with nxpy's Evaluator on the
  counting backend and counts compilations — the smallest useful Compiler.

Installed, they are found by name through their entry points::

    import nxpy as nx
    nx.default_backend("counting")
    nxpy.defn.jit(f, compiler="counting")
"""
from collections import Counter

from nxpy.compilers.evaluator import Evaluator
from nxpy.backends.numpy import NumpyBackend
from nxpy.defn import Compiler
from nxpy.testing import OP_SET

__all__ = ["CountingBackend", "CountingCompiler"]


class CountingBackend(NumpyBackend):
    """NumPy kernels, with a per-op call counter in ``counts``."""

    name = "counting"

    def __init__(self):
        self.counts = Counter()


def _counted(op):
    kernel = getattr(NumpyBackend, op)

    def method(self, out, *args, **options):
        self.counts[op] += 1
        return kernel(self, out, *args, **options)
    method.__name__ = op
    return method


for _op in OP_SET:
    if hasattr(NumpyBackend, _op):
        setattr(CountingBackend, _op, _counted(_op))


class CountingCompiler(Compiler):
    """The Evaluator on a CountingBackend; ``compiles`` counts graphs compiled."""

    name = "counting"
    options = frozenset()

    def __init__(self):
        self.backend = CountingBackend()
        self.evaluator = Evaluator()
        self.compiles = 0

    def compile(self, graph, opts):
        self.compiles += 1
        return self.evaluator.compile(graph, {"backend": self.backend})

    def result_backend(self, opts):
        return self.backend
