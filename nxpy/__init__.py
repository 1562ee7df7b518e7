"""nxpy: Elixir Nx's numerical definitions in Python, compiled to XLA.

>>> import nxpy as nx
>>> t = nx.tensor([[1, 2], [3, 4]], type="s32")
>>> (t @ t).tolist()
[[7, 10], [15, 22]]

This module is the public face of the package; docs/architecture.md draws the layers
underneath it. Importing it registers the built-in backends (``numpy``, ``exla``) and
compilers (``evaluator``, ``exla``); XLA itself starts only when first used.
"""
from . import types
from .backend import (Backend, backend_copy, backend_transfer, block_until_ready,
                      default_backend, get_backend, register_backend, register_backend_factory,
                      with_default_backend)
from .ops import *  # noqa: F403 - the op set is the public API
from .ops import (UNARY, BINARY, REDUCTIONS, template, tensor, from_numpy, iota, eye, full,
                  broadcast, to_tensor)
from ._context import HostOnlyError
from .tensor import DonatedError, Tensor
from .types import Type
from .registry import PluginError
from .mesh import AxisType, Mesh, get_mesh, make_mesh, set_mesh
from .layout import NamedSharding, P, PartitionSpec
from . import backends, compilers, defn, plugins
from . import linalg  # nxpy.linalg: Nx.LinAlg
from . import nn
from . import numpy
from . import random
from . import distributed
from .defn.compiler import register_compiler
from .defn.core import compatible
from .defn.kernel import (cond, fori_loop, hook, print_expr, print_value, runtime_call,
                          while_loop)
from .defn.transforms.vmap import vmap
from .defn.placement import auto_axes, device_put, explicit_axes, reshard
from .defn.sharding.explicit import ShardingTypeError, get_abstract_mesh, typeof
from .serialize import (SerializationError, deserialize, load, load_numpy, save, save_numpy,
                        serialize)
from . import interop
from .interop import from_dlpack
from .visualize import inspect_sharding, visualize_sharding
