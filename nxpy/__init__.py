"""nxpy: Elixir Nx's numerical definitions in Python, compiled to XLA.

>>> import nxpy as nx
>>> t = nx.tensor([[1, 2], [3, 4]], type="s32")
>>> (t @ t).tolist()
[[7, 10], [15, 22]]
"""
from . import types
from .backend import (Backend, backend_copy, backend_transfer, block_until_ready,
                      default_backend, get_backend, register_backend_factory)
from .ops import *  # noqa: F401,F403 - the op set is the public API
from .ops import (UNARY, BINARY, REDUCTIONS, template, tensor, from_numpy, iota, eye, full,
                  broadcast, to_tensor)
from .tensor import Tensor
from .types import Type
from . import plugins
from .plugins import PluginError, register_backend, register_compiler


def _numpy_backend():
    from .backends.numpy import NumpyBackend
    return NumpyBackend()


def _exla_backend():
    from .backends.exla.backend import ExlaBackend
    return ExlaBackend()


register_backend_factory("numpy", _numpy_backend)
register_backend_factory("exla", _exla_backend)

from .defn.kernel import cond, while_loop  # noqa: E402
from .mesh import Mesh  # noqa: E402
