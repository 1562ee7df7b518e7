"""The op front end: validation and shape/type/names inference, then dispatch.

Each op is described here once, in the module of its family; the inferred output
template ``out`` goes to the backend first, and backends (NumPy, Expr, EXLA, plugins)
only compute. The families, in the order they build on each other:

=================  =======================================================================
``core``           dispatch, the registered-op table, tensor/from_numpy/to_tensor/as_type
``elementwise``    the UNARY and BINARY tables, select, clip, bitcast, optimization_barrier,
                   ``//``, ``%``
``shaping``        reshape, squeeze, new_axis, broadcast, transpose, pad, reverse, concatenate
``creation``       iota, eye, full
``indexing``       slice, put_slice, ``x[...]``, gather, take(_along_axis), indexed_*
``reductions``     sum, product, reduce_max/min, all, any, argmax/argmin, mean
``contraction``    dot, matmul
``windows``        window_sum, window_max
``windows``        window_min/product/mean/reduce, window_scatter_max/min, reduce
``conv``           conv
``sorting``        sort, argsort, top_k, cumulative_sum/product/min/max, median, mode
``complex``        real, imag, conjugate, phase, complex, fft, ifft, fft2, ifft2, rfft, irfft
``linalg``         cholesky, triangular_solve, lu, qr, eigh, svd, solve (``nxpy.linalg``)
=================  =======================================================================

This package also gives :class:`~nxpy.tensor.Tensor` its operators (``+``, ``@``,
``x[i]``, ...) and op methods: the tensor sits below the ops, so they are installed from
here when nxpy is imported.

>>> import nxpy as nx
>>> x = nx.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> nx.sum(x, axes=[1]).tolist()
[3.0, 7.0]
>>> (x @ x).tolist(), (-x).T.tolist()
([[7.0, 10.0], [15.0, 22.0]], [[-1.0, -3.0], [-2.0, -4.0]])
"""
from __future__ import annotations

from ..tensor import Tensor
from .core import (OPS, PRIMITIVES, RESERVED, OpSpec, as_type, dispatch, dispatch_multi, fallback,
                   from_numpy, op_method, primitive, template, tensor, to_tensor)
from .creation import eye, full, iota
from .contraction import dot, matmul
from .elementwise import *  # noqa: F403 - the UNARY/BINARY ops, one function each
from .elementwise import (BINARY, UNARY, binary_compute_type, bitcast, clip, floor_divide, mod,
                          optimization_barrier, select)
from .indexing import (gather, index, indexed_add, indexed_put, put_slice, slice,
                       slice_along_axis, take, take_along_axis)
from .reductions import *  # noqa: F403
from .reductions import REDUCTIONS, argmax, argmin, mean
from .shaping import (broadcast, concatenate, new_axis, pad, reshape, reverse, squeeze, stack,
                      transpose)
from .windows import window_max, window_sum
from .windows import (reduce, window_mean, window_min, window_product, window_reduce,
                      window_scatter_max, window_scatter_min)
from .conv import conv
from .compositions import *  # noqa: F403 - compositions of the ops above, einsum
from .compositions import __all__ as _COMPOSITIONS
from .sorting import (CUMULATIVE, argsort, cumulative_max, cumulative_min, cumulative_product,
                      cumulative_sum, median, mode, permute_by_key, sort, top_k)
from .complex import (complex, conjugate, fft, fft2, ifft, ifft2, imag, irfft, phase, real,
                      rfft)
from . import linalg  # the linear-algebra primitives (public in nxpy.linalg, not here)
from . import methods  # Tensor's jax.Array methods (x.sum(), x.astype(), x.at[i].set(v), ...)

__all__ = (sorted(UNARY) + sorted(BINARY) + sorted(REDUCTIONS) + [
    "template", "dispatch", "to_tensor", "tensor", "from_numpy", "iota", "eye", "full",
    "floor_divide", "mod", "select", "clip", "as_type", "bitcast", "optimization_barrier",
    "reshape", "squeeze",
    "new_axis", "broadcast", "transpose", "pad", "reverse", "slice", "put_slice", "concatenate",
    "stack", "index", "argmax", "argmin", "mean", "dot", "matmul", "window_sum", "window_max",
    "binary_compute_type", "slice_along_axis", "gather", "take", "take_along_axis", "indexed_add",
    "indexed_put", "window_min", "window_product", "window_mean", "window_reduce",
    "window_scatter_max", "window_scatter_min", "reduce", "conv", "sort", "argsort", "top_k",
    "permute_by_key", "cumulative_sum", "cumulative_product", "cumulative_min",
    "cumulative_max", "median", "mode", "real", "imag", "conjugate", "phase", "complex", "fft",
    "ifft", "fft2", "ifft2", "rfft", "irfft"] + list(_COMPOSITIONS))

RESERVED.update(__all__)


def _install_tensor_methods():
    """Tensor's operators and op methods, bound to the front-end ops."""
    ops = globals()

    def binary(name, reflected=False):
        f = ops[name]

        def method(self, other):
            return f(other, self) if reflected else f(self, other)
        method.__name__ = method.__qualname__ = name
        return method

    for dunder, name in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                         ("truediv", "divide"), ("floordiv", "floor_divide"), ("mod", "mod"),
                         ("pow", "pow"), ("matmul", "matmul"), ("and", "bitwise_and"),
                         ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                         ("lshift", "left_shift"), ("rshift", "right_shift")]:
        setattr(Tensor, f"__{dunder}__", binary(name))
        setattr(Tensor, f"__r{dunder}__", binary(name, reflected=True))
    for dunder, name in [("eq", "equal"), ("ne", "not_equal"), ("lt", "less"),
                         ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal")]:
        setattr(Tensor, f"__{dunder}__", binary(name))
    Tensor.__neg__ = lambda self: ops["negate"](self)
    Tensor.__abs__ = lambda self: ops["abs"](self)
    Tensor.__invert__ = lambda self: ops["bitwise_not"](self)
    Tensor.__getitem__ = lambda self, i: index(self, i)

    def reshape_method(self, *shape, **kw):
        one = len(shape) == 1 and isinstance(shape[0], (tuple, list))
        return reshape(self, shape[0] if one else shape, **kw)

    Tensor.reshape = reshape_method
    Tensor.as_type = lambda self, type: as_type(self, type)
    Tensor.T = property(lambda self: transpose(self))
    methods.install()  # jax.Array's methods (replacing reshape by its superset)


_install_tensor_methods()
