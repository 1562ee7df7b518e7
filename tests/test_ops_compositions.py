"""The compositions family (nxpy.ops.compositions), einsum, nxpy.nn and the Nx semantic
fixes: each function against NumPy / jax.numpy / jax.nn on random inputs on the four
paths of tests/helpers.py (NumPy eager, Evaluator, EXLA, EXLA eager where cheap), Nx's
doctests (values, types, shapes, names), errors, gradients against jax.grad and jvp
against jax.jvp, JAX-exported
programs through the StableHLO importer, and one sharded case per kind of op."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
import pytest
from jax import lax

import nxpy as nx
from nxpy import nn
from nxpy.defn import grad, jit
from nxpy.defn.sharding import specs as SH
from nxpy.defn.shard_jit import shard_jit
from nxpy.stablehlo import load

# compositions are many ops: on EXLA's eager backend (one compile per op, PATHS) only where
# cheap, else CHEAP
from helpers import (ALL_TYPES, CHEAP, COMPILERS, INTS, PATHS, check, dt, gen, jvp_matches_jax,
                     rng_for, run, x64)


def rand(t, shape, key, domain="any"):
    return gen(t, shape, rng_for("compositions", key, t, shape), domain)


# ----------------------------------------------------------------------------------------
# Nx's doctests, ported: (expression, values, type, shape, names)
# ----------------------------------------------------------------------------------------
T = nx.tensor
DOCTESTS = [
    # tri, tril, triu
    (lambda: nx.tri(3, 3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]], "pred", (3, 3), None),
    (lambda: nx.tri(3, 3, k=1), [[1, 1, 0], [1, 1, 1], [1, 1, 1]], "pred", (3, 3), None),
    (lambda: nx.tril(T([[1, 2, 3], [4, 5, 6], [7, 8, 9]])), [[1, 0, 0], [4, 5, 0], [7, 8, 9]],
     "s32", (3, 3), None),
    (lambda: nx.tril(T([[1, 2, 3], [4, 5, 6], [7, 8, 9]]), k=1), [[1, 2, 0], [4, 5, 6], [7, 8, 9]],
     "s32", (3, 3), None),
    (lambda: nx.tril(nx.iota((2, 3, 4))), [[[0, 0, 0, 0], [4, 5, 0, 0], [8, 9, 10, 0]],
                                           [[12, 0, 0, 0], [16, 17, 0, 0], [20, 21, 22, 0]]], "s32",
     (2, 3, 4), None),
    (lambda: nx.triu(T([[1, 2, 3], [4, 5, 6], [7, 8, 9]])), [[1, 2, 3], [0, 5, 6], [0, 0, 9]],
     "s32", (3, 3), None),
    (lambda: nx.triu(T([[1, 2, 3], [4, 5, 6], [7, 8, 9]]), k=1), [[0, 2, 3], [0, 0, 6], [0, 0, 0]],
     "s32", (3, 3), None),
    (lambda: nx.triu(nx.iota((2, 3, 4))), [[[0, 1, 2, 3], [0, 5, 6, 7], [0, 0, 10, 11]],
                                           [[12, 13, 14, 15], [0, 17, 18, 19], [0, 0, 22, 23]]],
     "s32", (2, 3, 4), None),
    # take_diagonal, make_diagonal, put_diagonal
    (lambda: nx.take_diagonal(T([[0, 1, 2], [3, 4, 5], [6, 7, 8]])), [0, 4, 8], "s32", (3,), None),
    (lambda: nx.take_diagonal(nx.iota((3, 3)), offset=1), [1, 5], "s32", (2,), None),
    (lambda: nx.take_diagonal(nx.iota((3, 3)), offset=-1), [3, 7], "s32", (2,), None),
    (lambda: nx.take_diagonal(nx.iota((3, 2, 2))), [[0, 3], [4, 7], [8, 11]], "s32", (3, 2), None),
    (lambda: nx.take_diagonal(nx.iota((3, 2, 2)), offset=-1), [[2], [6], [10]], "s32", (3, 1),
     None),
    (lambda: nx.make_diagonal(T([1, 2, 3, 4])), np.diag([1, 2, 3, 4]), "s32", (4, 4), None),
    (lambda: nx.make_diagonal(T([1, 2, 3]), offset=1), np.diag([1, 2, 3], 1), "s32", (4, 4), None),
    (lambda: nx.make_diagonal(T([1, 2, 3]), offset=-1), np.diag([1, 2, 3], -1), "s32", (4, 4),
     None),
    (lambda: nx.make_diagonal(T([1, 2, 3]), offset=-4), np.diag([1, 2, 3], -4), "s32", (7, 7),
     None),
    (lambda: nx.make_diagonal(T([1, 2, 3]), offset=4), np.diag([1, 2, 3], 4), "s32", (7, 7), None),
    (lambda: nx.put_diagonal(nx.broadcast(0, (4, 4)), T([1, 2, 3, 4])), np.diag([1, 2, 3, 4]),
     "s32", (4, 4), None),
    (lambda: nx.put_diagonal(nx.broadcast(0, (4, 3)), T([1, 2, 3])),
     [[1, 0, 0], [0, 2, 0], [0, 0, 3], [0, 0, 0]], "s32", (4, 3), None),
    (lambda: nx.put_diagonal(nx.broadcast(0, (4, 4)), T([1, 2, 3]), offset=1),
     np.diag([1, 2, 3], 1), "s32", (4, 4), None),
    (lambda: nx.put_diagonal(nx.broadcast(0, (4, 3)), T([1, 2]), offset=1),
     [[0, 1, 0], [0, 0, 2], [0, 0, 0], [0, 0, 0]], "s32", (4, 3), None),
    (lambda: nx.put_diagonal(nx.broadcast(0, (4, 4)), T([1, 2, 3]), offset=-1),
     np.diag([1, 2, 3], -1), "s32", (4, 4), None),
    (lambda: nx.put_diagonal(nx.broadcast(0, (4, 3)), T([1, 2, 3]), offset=-1),
     [[0, 0, 0], [1, 0, 0], [0, 2, 0], [0, 0, 3]], "s32", (4, 3), None),
    # flatten, tile, rename
    (lambda: nx.flatten(nx.iota((2, 2, 2, 2))), list(range(16)), "s32", (16,), None),
    (lambda: nx.flatten(nx.iota((16,))), list(range(16)), "s32", (16,), None),
    (lambda: nx.flatten(nx.iota((1, 2, 3)), axes=[1, 2]), [[0, 1, 2, 3, 4, 5]], "s32", (1, 6),
     None),
    (lambda: nx.tile(T([0, 1, 2]), [2]), [0, 1, 2, 0, 1, 2], "s32", (6,), None),
    (lambda: nx.tile(T([0, 1, 2]), [1, 2]), [[0, 1, 2, 0, 1, 2]], "s32", (1, 6), None),
    (lambda: nx.tile(T([0, 1, 2]), [2, 2]), [[0, 1, 2, 0, 1, 2]] * 2, "s32", (2, 6), None),
    (lambda: nx.tile(T([0, 1, 2]), [2, 1]), [[0, 1, 2]] * 2, "s32", (2, 3), None),
    (lambda: nx.tile(T([0, 1, 2]), [2, 1, 2]), [[[0, 1, 2, 0, 1, 2]]] * 2, "s32", (2, 1, 6), None),
    (lambda: nx.tile(T([[1, 2], [3, 4]]), [2]), [[1, 2, 1, 2], [3, 4, 3, 4]], "s32", (2, 4), None),
    (lambda: nx.tile(T([[1, 2], [3, 4]]), [2, 1]), [[1, 2], [3, 4], [1, 2], [3, 4]], "s32", (4, 2),
     None),
    (lambda: nx.tile(T([[1, 2], [3, 4]]), [1, 2]), [[1, 2, 1, 2], [3, 4, 3, 4]], "s32", (2, 4),
     None),
    (lambda: nx.tile(T([1, 2, 3, 4]), [4, 1]), [[1, 2, 3, 4]] * 4, "s32", (4, 4), None),
    (lambda: nx.rename(nx.iota((2, 3)), ["foo", "bar"]), [[0, 1, 2], [3, 4, 5]], "s32", (2, 3),
     ("foo", "bar")),
    # split
    (lambda: nx.split(T([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]), 2, axis=0)[1],
     [[8, 9, 10, 11]], "s32", (1, 4), None),
    (lambda: nx.split(T([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]), 2, axis=1)[0],
     [[0, 1], [4, 5], [8, 9]], "s32", (3, 2), None),
    (lambda: nx.split(T([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]), 0.5, axis=0)[0],
     [[0, 1, 2, 3], [4, 5, 6, 7]], "s32", (2, 4), None),
    (lambda: nx.split(T([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]), 0.75, axis=1)[1],
     [[3], [7], [11]], "s32", (3, 1), None),
    (lambda: nx.split(T([1, 2, 3, 4]), -1)[0], [1, 2, 3], "s32", (3,), None),
    # outer
    (lambda: nx.outer(T([1, 2, 3], names=["x"]), 100), [[100], [200], [300]], "s32", (3, 1),
     ("x", None)),
    (lambda: nx.outer(T([1, 2, 3], names=["x"]), T([10, 20], names=["y"])),
     [[10, 20], [20, 40], [30, 60]], "s32", (3, 2), ("x", "y")),
    (lambda: nx.outer(T([[1, 2], [3, 4]], names=["x", "y"]), T([10, 20, 30], names=["z"])),
     [[10, 20, 30], [20, 40, 60], [30, 60, 90], [40, 80, 120]], "s32", (4, 3), ("x", "z")),
    # diff
    (lambda: nx.diff(T([1, 2, 4, 7, 0])), [1, 2, 3, -7], "s32", (4,), None),
    (lambda: nx.diff(T([1, 2, 4, 7, 0]), order=2), [1, 1, -10], "s32", (3,), None),
    (lambda: nx.diff(T([[1, 3, 6, 10], [0, 5, 6, 8]])), [[2, 3, 4], [5, 1, 2]], "s32", (2, 3),
     None),
    (lambda: nx.diff(T([[1, 3, 6, 10], [0, 5, 6, 8]]), axis=0), [[-1, 2, 0, -2]], "s32", (1, 4),
     None),
    (lambda: nx.diff(T([1, 2, 4, 7, 0]), order=0), [1, 2, 4, 7, 0], "s32", (5,), None),
    # linspace
    (lambda: nx.linspace(5, 8, n=5), [5.0, 5.75, 6.5, 7.25, 8.0], "f32", (5,), None),
    (lambda: nx.linspace(0, 10, n=5, endpoint=False, name="x"), [0.0, 2.0, 4.0, 6.0, 8.0], "f32",
     (5,), ("x",)),
    (lambda: nx.linspace(0, 24, n=8, type="u8"), [0, 3, 6, 10, 13, 17, 20, 24], "u8", (8,), None),
    (lambda: nx.linspace(0, 24, n=8, type="s32", endpoint=False), [0, 3, 6, 9, 12, 15, 18, 21],
     "s32", (8,), None),
    (lambda: nx.linspace(T([[[0, 10]]]), T([[[10, 100]]]), n=10, name="samples", type="u8"),
     [[[[0, 1, 2, 3, 4, 5, 6, 7, 8, 10], [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]]]], "u8",
     (1, 1, 2, 10), (None, None, None, "samples")),
    (lambda: nx.linspace(0, 10, n=1), [0.0], "f32", (1,), None),
    # reflect
    (lambda: nx.reflect(T([0, 1, 2]), [(3, 1)]), [1, 2, 1, 0, 1, 2, 1], "s32", (7,), None),
    (lambda: nx.reflect(T([[0, 1, 2], [3, 4, 5]], names=["x", "y"]), [(2, 0), (2, 1)]),
     [[2, 1, 0, 1, 2, 1], [5, 4, 3, 4, 5, 4], [2, 1, 0, 1, 2, 1], [5, 4, 3, 4, 5, 4]], "s32",
     (4, 6), ("x", "y")),
    # log2, log10, log/2, fill
    (lambda: nx.log2(2), 1.0, "f32", (), None),
    (lambda: nx.log2(T([1, 2, 4, 8])), [0.0, 1.0, 2.0, 3.0], "f32", (4,), None),
    (lambda: nx.log10(T([1, 10, 100, 1000])), [0.0, 1.0, 2.0, 3.0], "f32", (4,), None),
    (lambda: nx.log(2, 2), 1.0, "f32", (), None),
    (lambda: nx.log(T([3, 9, 27, 81]), 3), [1.0, 2.0, 3.0, 4.0], "f32", (4,), None),
    (lambda: nx.fill(nx.iota((2, 2)), 5), [[5, 5], [5, 5]], "s32", (2, 2), None),
    (lambda: nx.fill(nx.iota((2, 2)), 5, type="u8"), [[5, 5], [5, 5]], "u8", (2, 2), None),
    (lambda: nx.fill(nx.iota((2, 2)), 5.0), [[5.0, 5.0], [5.0, 5.0]], "f32", (2, 2), None),
    # all_close
    (lambda: nx.all_close(T([1.0e10, 1.0e-7]), T([1.00001e10, 1.0e-8])), False, "pred", (), None),
    (lambda: nx.all_close(T([1.0e-8, 1.0e-8]), T([1.0e-8, 1.0e-9])), True, "pred", (), None),
    (lambda: nx.all_close(T(np.nan, type="f32"), T(np.nan, type="f32")), False, "pred", (), None),
    (lambda: nx.all_close(T(np.nan, type="f32"), T(0)), False, "pred", (), None),
    (lambda: nx.all_close(T([np.nan, 1]), T([np.nan, 1]), equal_nan=True), True, "pred", (), None),
    (lambda: nx.all_close(T([np.nan, 1]), T([np.nan, 1]), equal_nan=False), False, "pred", (),
     None),
    (lambda: nx.all_close(T(np.inf, type="f32"), T(np.inf, type="f32")), True, "pred", (), None),
    (lambda: nx.all_close(T(np.inf, type="f32"), T(-np.inf, type="f32")), False, "pred", (), None),
    (lambda: nx.all_close(T(1.0e30), T(np.inf, type="f32")), False, "pred", (), None),
    (lambda: (lambda x: nx.all_close(x, x))(nx.left_shift(T([[5, 6], [7, 8]], type="s8"),
                                                          T([[1, 2], [3, 4]], type="s8"))),
     True, "pred", (), None),
    # logsumexp
    (lambda: nx.logsumexp(T([1, 2, 3, 4, 5, 6])), 6.4561934, "f32", (), None),
    (lambda: nx.logsumexp(T([1, 2, 3, 4, 5, 6]), exp_scaling_factor=0.5), 5.7630463, "f32", (),
     None),
    (lambda: nx.logsumexp(T([1, 2, 3, 4, 5, 6]), exp_scaling_factor=T([-1, -1, -1, 1, 1, 1])),
     6.356537, "f32", (), None),
    (lambda: nx.logsumexp(T([[1, 2], [3, 4], [5, 6]])), 6.4561934, "f32", (), None),
    (lambda: nx.logsumexp(T([[1, 2], [3, 4], [5, 6]], names=["x", "y"]), axes=["x"]),
     [5.1429315, 6.1429315], "f32", (2,), ("y",)),
    (lambda: nx.logsumexp(T([[1, 2], [3, 4], [5, 6]], names=["x", "y"]), axes=["y"]),
     [2.3132617, 4.3132615, 6.3132615], "f32", (3,), ("x",)),
    (lambda: nx.logsumexp(nx.iota((2, 2, 2), names=["x", "y", "z"]) + 1, axes=["x", "z"]),
     [6.3314114, 8.331411], "f32", (2,), ("y",)),
    (lambda: nx.logsumexp(nx.iota((2, 2, 2), names=["x", "y", "z"]) + 1, axes=["x", "z"],
                          keep_axes=True),
     [[[6.3314114], [8.331411]]], "f32", (1, 2, 1), ("x", "y", "z")),
    # variance, standard_deviation
    (lambda: nx.variance(T([[1, 2], [3, 4]])), 1.25, "f32", (), None),
    (lambda: nx.variance(T([[1, 2], [3, 4]]), ddof=1), 1.6666666, "f32", (), None),
    (lambda: nx.variance(T([[1, 2], [3, 4]]), axes=[0]), [1.0, 1.0], "f32", (2,), None),
    (lambda: nx.variance(T([[1, 2], [3, 4]]), axes=[1]), [0.25, 0.25], "f32", (2,), None),
    (lambda: nx.variance(T([[1, 2], [3, 4]]), axes=[0], ddof=1), [2.0, 2.0], "f32", (2,), None),
    (lambda: nx.variance(T([[1, 2], [3, 4]]), axes=[1], ddof=1), [0.5, 0.5], "f32", (2,), None),
    (lambda: nx.variance(T([[1, 2], [3, 4]]), axes=[1], keep_axes=True), [[0.25], [0.25]], "f32",
     (2, 1), None),
    (lambda: nx.standard_deviation(T([[1, 2], [3, 4]])), 1.118034, "f32", (), None),
    (lambda: nx.standard_deviation(T([[1, 2], [3, 4]]), ddof=1), 1.2909944, "f32", (), None),
    (lambda: nx.standard_deviation(T([[1, 2], [10, 20]]), axes=[0]), [4.5, 9.0], "f32", (2,), None),
    (lambda: nx.standard_deviation(T([[1, 2], [10, 20]]), axes=[1]), [0.5, 5.0], "f32", (2,), None),
    (lambda: nx.standard_deviation(T([[1, 2], [10, 20]]), axes=[0], ddof=1), [6.363961, 12.727922],
     "f32", (2,), None),
    (lambda: nx.standard_deviation(T([[1, 2], [10, 20]]), axes=[1], ddof=1), [0.70710677, 7.071068],
     "f32", (2,), None),
    (lambda: nx.standard_deviation(T([[1, 2], [10, 20]]), keep_axes=True), [[7.628073]], "f32",
     (1, 1), None),
    # weighted_mean
    (lambda: nx.weighted_mean(T(42), T(2)), 42.0, "f32", (), None),
    (lambda: nx.weighted_mean(T([1, 2, 3]), T([3, 2, 1])), 1.6666666, "f32", (), None),
    (lambda: nx.weighted_mean(T([1, 2, 3], names=["x"]), T([4, 5, 6]), axes=[0]), 2.1333334, "f32",
     (), None),
    (lambda: nx.weighted_mean(T([1, 2, 3], type="u8", names=["x"]), T([1, 3, 5]), axes=["x"]),
     2.4444444, "f32", (), None),
    (lambda: nx.weighted_mean(nx.iota((3, 4)), T([1, 2, 3, 4]), axes=[1]), [2.0, 6.0, 10.0], "f32",
     (3,), None),
    (lambda: nx.weighted_mean(nx.iota((2, 4, 4, 1)), nx.broadcast(2, (4, 4)), axes=[1, 2]),
     [[7.5], [23.5]], "f32", (2, 1), None),
    (lambda: nx.weighted_mean(nx.iota((2, 2, 3), names=["x", "y", "z"]),
                              T([[[0, 1, 2], [1, 1, 0]], [[-1, 1, -1], [1, 1, -1]]]), axes=[-1],
                              keep_axes=True),
     [[[1.6666666], [3.5]], [[7.0], [8.0]]], "f32", (2, 2, 1), ("x", "y", "z")),
    # covariance
    (lambda: nx.covariance(T([[1, 2], [3, 4], [5, 6]])), [[2.6666667] * 2] * 2, "f32", (2, 2),
     None),
    (lambda: nx.covariance(T([[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]])),
     [[[2.6666667] * 2] * 2] * 2, "f32", (2, 2, 2), None),
    (lambda: nx.covariance(T([[1, 2], [3, 4], [5, 6]]), ddof=1), [[4.0, 4.0], [4.0, 4.0]], "f32",
     (2, 2), None),
    (lambda: nx.covariance(T([[1, 2], [3, 4], [5, 6]]), T([4, 3])),
     [[3.6666667, 1.6666666], [1.6666666, 3.6666667]], "f32", (2, 2), None),
    # population_count, count_leading_zeros
    (lambda: nx.population_count(1), 1, "s32", (), None),
    (lambda: nx.population_count(-128), 25, "s32", (), None),
    (lambda: nx.population_count(T([0, 1, 254, 255], names=["x"])), [0, 1, 7, 8], "s32", (4,),
     ("x",)),
    (lambda: nx.population_count(T([0, 1, 126, 127, -1, -127, -128], type="s8", names=["x"])),
     [0, 1, 6, 7, 8, 2, 1], "s8", (7,), ("x",)),
    (lambda: nx.count_leading_zeros(1), 31, "s32", (), None),
    (lambda: nx.count_leading_zeros(-1), 0, "s32", (), None),
    (lambda: nx.count_leading_zeros(T([0, 0xF, 0xFF, 0xFFFF], names=["x"])), [32, 28, 24, 16],
     "s32", (4,), ("x",)),
    (lambda: nx.count_leading_zeros(T([0xF0000000, 0x0F000000], type="u32").as_type("s32")), [0, 4],
     "s32", (2,), None),
    (lambda: nx.count_leading_zeros(T([0, 0xF, 0xFF, 0xFFFF], type="s64")), [64, 60, 56, 48], "s64",
     (4,), None),
    # Nx's doctest writes 0xFFFF as s16 (its bits); nxpy rejects values a type cannot hold,
    # so the same bits are written as -1
    (lambda: nx.count_leading_zeros(T([0, 0xF, 0xFF, -1], type="s16")), [16, 12, 8, 0], "s16", (4,),
     None),
    (lambda: nx.count_leading_zeros(T([0, 1, 2, 4, 8, 16, 32, 64, -1, -128], type="s8")),
     [8, 7, 6, 5, 4, 3, 2, 1, 0, 0], "s8", (10,), None),
    (lambda: nx.count_leading_zeros(T([0, 1, 2, 4, 8, 16, 32, 64, 128], type="u8")),
     [8, 7, 6, 5, 4, 3, 2, 1, 0], "u8", (9,), None),
    # the semantic fixes: names kept by keep_axes and arg reductions, broadcast names,
    # tensor(t, names=), merge_number, as_type of a number
    (lambda: nx.sum(T([[1, 2], [3, 4]], names=["x", "y"]), axes=["x"], keep_axes=True), [[4, 6]],
     "s32", (1, 2), ("x", "y")),
    (lambda: nx.sum(nx.iota((2, 2, 3), names=["x", "y", "z"]), axes=["x", "z"]), [24, 42], "s32",
     (2,), ("y",)),
    (lambda: nx.product(nx.iota((2, 2, 3), names=["x", "y", "z"]), axes=["z"], keep_axes=True),
     [[[0], [60]], [[336], [990]]], "s32", (2, 2, 1), ("x", "y", "z")),
    (lambda: nx.product(nx.iota((2, 2, 3), names=["x", "y", "z"]), axes=["x", "z"]), [0, 59400],
     "s32", (2,), ("y",)),
    (lambda: nx.product(T([[10, 20], [30, 40]], type="u8", names=["x", "y"])), 240000, "u32", (),
     None),
    (lambda: nx.reduce_max(T([[[1, 2], [4, 5]], [[2, 4], [3, 8]]], names=["x", "y", "z"]),
                           axes=["x", "z"], keep_axes=True),
     [[[4], [8]]], "s32", (1, 2, 1), ("x", "y", "z")),
    (lambda: nx.reduce_min(T([[[1, 2], [4, 5]], [[2, 4], [3, 8]]], names=["x", "y", "z"]),
                           axes=["x", "z"], keep_axes=True),
     [[[1], [3]]], "s32", (1, 2, 1), ("x", "y", "z")),
    (lambda: nx.all(T([[-1, 0, 1], [2, 3, 4]], names=["x", "y"]), axes=["y"], keep_axes=True),
     [[0], [1]], "pred", (2, 1), ("x", "y")),
    (lambda: nx.any(T([[0, 1, 0], [0, 1, 2]], names=["x", "y"]), axes=["y"], keep_axes=True),
     [[1], [1]], "pred", (2, 1), ("x", "y")),
    (lambda: nx.mean(nx.iota((2, 2, 3), names=["x", "y", "z"]), axes=[-1], keep_axes=True),
     [[[1.0], [4.0]], [[7.0], [10.0]]], "f32", (2, 2, 1), ("x", "y", "z")),
    (lambda: nx.argmax(T([[[4, 2, 3], [1, -5, 3]], [[6, 2, 3], [4, 8, 3]]], names=["x", "y", "z"]),
                       axis="y"),
     [[0, 0, 0], [0, 1, 0]], "s32", (2, 3), ("x", "z")),
    (lambda: nx.argmax(T([[[4, 2, 3], [1, -5, 3]], [[6, 2, 3], [4, 8, 3]]], names=["x", "y", "z"]),
                       tie_break="high", axis="y", type="u32"),
     [[0, 0, 1], [0, 1, 1]], "u32", (2, 3), ("x", "z")),
    (lambda: nx.argmax(T([[[4, 2, 3], [1, -5, 3]], [[6, 2, 3], [4, 8, 3]]], names=["x", "y", "z"]),
                       axis="y", keep_axis=True),
     [[[0, 0, 0]], [[0, 1, 0]]], "s32", (2, 1, 3), ("x", "y", "z")),
    (lambda: nx.argmin(T([[[4, 2, 3], [1, -5, 3]], [[6, 2, 3], [4, 8, 3]]], names=["x", "y", "z"]),
                       axis="z"),
     [[1, 1], [1, 2]], "s32", (2, 2), ("x", "y")),
    (lambda: nx.broadcast(T([[1], [2]], names=["x", "y"]),
                          T([[10, 20], [30, 40]], names=["i", "j"])), [[1, 1], [2, 2]], "s32",
     (2, 2), ("i", "j")),
    (lambda: nx.broadcast(T([[1, 2]], names=["x", "y"]), T([[10, 20], [30, 40]], names=["i", "j"])),
     [[1, 2], [1, 2]], "s32", (2, 2), ("i", "j")),
    (lambda: nx.broadcast(nx.iota((2, 2), names=["x", "y"]), (2, 2)), [[0, 1], [2, 3]], "s32",
     (2, 2), (None, None)),
    (lambda: nx.broadcast(nx.iota((2, 2), names=["x", "y"]), (2, 2), names=["i", "j"]),
     [[0, 1], [2, 3]], "s32", (2, 2), ("i", "j")),
    (lambda: nx.broadcast(T([1, 2, 3]), (3, 2), axes=[0], names=["x", "y"]),
     [[1, 1], [2, 2], [3, 3]], "s32", (3, 2), ("x", "y")),
    (lambda: nx.tensor(T([1, 2, 3]), names=["row"]), [1, 2, 3], "s32", (3,), ("row",)),
    (lambda: nx.tensor(T([1, 2, 3], names=["column"])), [1, 2, 3], "s32", (3,), (None,)),
    (lambda: nx.add(T([0, 1, 2], type="u8", names=["data"]), -1), [-1, 0, 1], "s16", (3,),
     ("data",)),
    (lambda: nx.add(T([0, 1, 2], type="u8"), 256), [256, 257, 258], "u16", (3,), None),
    (lambda: nx.add(T([0, 1, 2], type="s8"), -129), [-129, -128, -127], "s16", (3,), None),
    (lambda: nx.add(T([0, 1], type="u64"), -1337), [-1337, -1336], "s64", (2,), None),
    (lambda: nx.as_type(1.0e-128, "f32"), 0.0, "f32", (), None),
    (lambda: nx.as_type(1.0e-128, "f64"), 1.0e-128, "f64", (), None),
]


@pytest.mark.parametrize("i", range(len(DOCTESTS)))
def test_nx_doctests(i):
    f, values, t, shape, names = DOCTESTS[i]
    r = f()
    assert str(r.type) == t, f"type {r.type}, expected {t}"
    assert r.shape == shape, f"shape {r.shape}, expected {shape}"
    assert r.names == (names if names is not None else (None,) * len(shape))
    a = r.to_numpy()
    want = np.asarray(values)
    if r.type.is_inexact:
        np.testing.assert_allclose(a.astype(np.float64), want, rtol=2e-7, atol=0)
    else:
        assert a.tolist() == want.astype(a.dtype).tolist()


# ----------------------------------------------------------------------------------------
# Random inputs against NumPy / jax.numpy, on every path
# ----------------------------------------------------------------------------------------
def test_tril_triu_every_type():
    for t in ALL_TYPES:
        x = rand(t, (2, 3, 4), "tri")
        for k in (0, 2, -1):
            check(run(lambda v: (nx.tril(v, k=k), nx.triu(v, k=k)), x, paths=CHEAP),
                  [np.tril(x, k), np.triu(x, k)], t, what=f"tril/triu {t} k={k}")


def test_diagonals_every_type():
    for t in ALL_TYPES:
        x = rand(t, (2, 3, 4), "diag")
        v = rand(t, (3,), "vec")
        for k in (0, 1, -2):
            d = np.diagonal(x, k, -2, -1)
            put = x[0].copy()
            idx = np.arange(d.shape[-1])
            put[idx - min(k, 0), idx + max(k, 0)] = v[:d.shape[-1]]
            check(run(lambda a, b: (nx.take_diagonal(a, offset=k),
                                    nx.put_diagonal(a[0], b[:d.shape[-1]], offset=k)),
                      x, v, paths=CHEAP), [d, put], t, what=f"diagonals {t} k={k}")
        # Nx puts x into a zero s32 tensor: the type is x's merged with s32
        mt = {"s8": "s32", "s16": "s32", "u8": "s32", "u16": "s32", "pred": "s32", "u32": "s64",
              "u64": "s64"}.get(t, t)
        check(run(lambda a: nx.make_diagonal(a, offset=-1), v, paths=CHEAP),
              np.diag(v, -1).astype(dt(mt)), mt, what=f"make_diagonal {t}")


def test_shape_functions_vs_numpy():
    x = rand("f32", (2, 3, 4), "shape")
    i = rand("s16", (3, 4), "shape")
    check(run(lambda v: (nx.flatten(v), nx.flatten(v, axes=[0, 1]), nx.tile(v, [2, 1, 1, 3])), x,
              paths=PATHS),
          [x.reshape(-1), x.reshape(6, 4), np.tile(x, [2, 1, 1, 3])], "f32")
    check(run(lambda v: (nx.reflect(v, [(5, 2), (1, 6)]), *nx.split(v, 0.3, axis=1)), i,
              paths=CHEAP),
          [np.pad(i, [(5, 2), (1, 6)], mode="reflect"), i[:, :2], i[:, 2:]], "s16")
    check(run(lambda v: nx.reflect(v, [(3, 2)]), i[:1, 0], paths=CHEAP), np.full((6,), i[0, 0]),
          "s16",
          what="reflect of one element")
    check(run(lambda v: (nx.diff(v, order=2, axis=0), nx.diff(v)), x, paths=CHEAP),
          [np.diff(x, 2, axis=0), np.diff(x)], "f32")


def _batches_np(v, n, leftover):
    """NumPy's batches of ``n`` along axis 0 (the oracle): the last completed from the start
    with "repeat"."""
    out = [v[i:i + n] for i in range(0, len(v) - n + 1, n)]
    if len(v) % n and leftover == "repeat":
        out.append(np.concatenate([v[len(v) - len(v) % n:], v[:n - len(v) % n]]))
    return out


@pytest.mark.parametrize("leftover", ["repeat", "discard"])
def test_to_batched_vs_numpy(leftover):
    x = rand("f32", (7, 2, 3), "batched")
    for n in (1, 3, 7):
        want = _batches_np(x, n, leftover)
        check(run(lambda v, n=n: tuple(nx.to_batched(v, n, leftover=leftover)), x, paths=PATHS),
              want, "f32", what=f"to_batched {n} {leftover}")
    # Nx's doctests: a lazy sequence, names kept, repeat wraps around
    assert [b.tolist() for b in nx.to_batched(nx.iota((10,)), 3)] == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 0, 1]]
    assert [b.tolist() for b in nx.to_batched(nx.iota((10,)), 3, leftover="discard")] == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    (a, b) = nx.to_batched(nx.iota((2, 2, 2), names=["b", "r", "c"]), 1)
    assert (a.tolist(), b.tolist(), a.names) == ([[[0, 1], [2, 3]]], [[[4, 5], [6, 7]]],
                                                 ("b", "r", "c"))
    batches = nx.to_batched(nx.iota((4,)), 2)
    assert next(batches).tolist() == [0, 1]  # made one at a time


def test_linspace_vs_jnp():
    with x64():
        for t, endpoint in [("f32", True), ("f64", False), ("s32", True)]:
            a, b = np.array([0.0, -3.0]), np.array([10.0, 4.0])
            want = np.asarray(jnp.linspace(a, b, 7, endpoint=endpoint,
                                           axis=-1)).astype(dt(t) if t != "s32" else np.float64)
            if t == "s32":  # Nx casts the float samples to the integer type (truncation)
                want = np.trunc(np.asarray(jnp.linspace(a.astype(np.int32), b.astype(np.int32), 7,
                                                        axis=-1), np.float64))
            check(run(lambda u, w: nx.linspace(u, w, n=7, type=t, endpoint=endpoint),
                      a.astype(np.int32 if t == "s32" else np.float64),
                      b.astype(np.int32 if t == "s32" else np.float64), paths=CHEAP),
                  want.astype(dt(t)), t,
                  rtol=1e-6, atol=1e-6)


def test_outer_vs_jnp():
    for ta, tb in [("f32", "s8"), ("u8", "u8"), ("f64", "f64")]:
        a, b = rand(ta, (2, 3), "oa"), rand(tb, (4,), "ob")
        with x64():
            want = np.asarray(jnp.outer(a, b))
        t = str(nx.types.merge(nx.types.parse(ta), nx.types.parse(tb)))
        check(run(lambda u, w: nx.outer(u, w), a, b, paths=CHEAP), want.astype(dt(t)), t)


def test_aggregates_vs_jnp():
    x = rand("f32", (3, 4, 5), "agg")
    w = rand("f32", (4, 5), "aggw", "pos")
    with x64():
        xs = jnp.asarray(x, jnp.float64)
        want = [jsp.logsumexp(xs, axis=(0, 2)), jsp.logsumexp(xs, axis=1, b=0.5, keepdims=True),
                jnp.var(xs, axis=1, ddof=1), jnp.std(xs),
                np.average(x[:, :, 0], axis=1, weights=w[:, 0]),
                np.cov(x[0], rowvar=False, ddof=1)]
    check(run(lambda v, u: (nx.logsumexp(v, axes=[0, 2]),
                            nx.logsumexp(v, axes=[1], exp_scaling_factor=0.5, keep_axes=True),
                            nx.variance(v, axes=[1], ddof=1), nx.standard_deviation(v),
                            nx.weighted_mean(v[:, :, 0], u[:, 0], axes=[1]),
                            nx.covariance(v[0], ddof=1)), x, w, paths=CHEAP),
          [np.asarray(r) for r in want], "f32", rtol=2e-5, atol=2e-5)
    # all_close against np.allclose, integers included
    for a, b, kw in [(x, x + 1e-6, {}), (x, x * 1.01, {}), (x, x * 1.01, {"rtol": 0.05}),
                     (np.array([np.inf, np.nan, 1.0], np.float32),
                      np.array([np.inf, np.nan, 1.0], np.float32), {"equal_nan": True}),
                     (np.array([-128, 5], np.int8), np.array([-128, 6], np.int8), {"atol": 1})]:
        check(run(lambda u, v: nx.all_close(u, v, **kw), a, b, paths=CHEAP),
              np.allclose(a, b, **kw), "pred")


def test_bit_counts_every_int_type():
    for t in INTS:
        info = np.iinfo(dt(t))
        x = np.concatenate([np.array([0, 1, info.max, info.min,
                                      -1 if t[0] == "s" else info.max - 1], dt(t)),
                            rand(t, (7,), "bits")])
        x = np.concatenate([x, (rand("u64", (4,), "bits2") * 12345678901).astype(dt(t))])
        with x64():
            want = [np.asarray(lax.population_count(x)), np.asarray(lax.clz(x))]
        check(run(lambda v: (nx.population_count(v), nx.count_leading_zeros(v)), x, paths=PATHS),
              want, t,
              what=f"bit counts {t}")
    check(run(lambda v: (nx.population_count(v), nx.count_leading_zeros(v)),
              np.zeros((0, 3), np.int32), paths=CHEAP),
          [np.zeros((0, 3), np.int32)] * 2, "s32", what="empty")


@pytest.mark.parametrize("t", ["s8", "s16", "s32", "s64"])
def test_count_leading_zeros_of_constants(t):
    """Values XLA knows at compile time: its constant folder counts a negative signed
    value's zeros after sign-extending it (jax.jit(lambda: lax.clz(jnp.int16(-1))) gives
    -48); nxpy counts the bits as unsigned (found by the fuzzer)."""
    bits = np.iinfo(dt(t)).bits
    want = np.array([0, 0, 0, bits, bits - 1], dt(t))
    f = jit(lambda: nx.count_leading_zeros(nx.tensor([-1, -2, np.iinfo(dt(t)).min, 0, 1], type=t)),
            compiler="exla")
    np.testing.assert_array_equal(f().to_numpy(), want)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]), ("...i,...i", [(4, 3), (3,)]),
    ("ij,ij,ij->i", [(2, 3)] * 3),
    ("abc,cd,bd->ad", [(2, 3, 4), (4, 5), (3, 5)]), ("i i j -> j", [(2, 2, 3)]),
    ("ijk,kj->i", [(2, 3, 4), (4, 3)]),
    ("...,...", [(2, 3), (2, 3)]), ("ij,jk->ik", [(2, 0), (0, 4)]), ("a,a->", [(5,), (5,)]),
    ("Ab,bC->AC", [(2, 3), (3, 2)]),
    ("ij,kj->ikj", [(1, 3), (4, 3)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum_vs_jnp(spec, shapes):
    xs = [rand("f32", s, ("ein", spec, k)) for k, s in enumerate(shapes)]
    with x64():
        want = np.asarray(jnp.einsum(spec, *[a.astype(np.float64) for a in xs]))
    check(run(lambda *v: nx.einsum(spec, *v), *xs, paths=CHEAP), want, "f32", rtol=1e-5, atol=1e-5)


def test_einsum_types():
    a, b = rand("s8", (3, 4), "eint"), rand("s8", (4, 2), "eint2")
    with x64():
        want = [np.asarray(jnp.einsum("ij,jk->ik", a, b)), np.asarray(jnp.einsum("ij->", a))]
    check(run(lambda u, v: (nx.einsum("ij,jk->ik", u, v), nx.einsum("ij->", u)), a, b, paths=CHEAP),
          want, "s8")
    r = nx.einsum("ij,jk", nx.tensor(a, type="s16"), nx.tensor(b, type="f32"))
    assert str(r.type) == "f32" and r.names == (None, None)


# ----------------------------------------------------------------------------------------
# nxpy.nn against jax.nn
# ----------------------------------------------------------------------------------------
def test_nn_vs_jax_nn():
    x = rand("f32", (3, 5), "nn")
    x[0, :3] = [0.0, np.nan, -np.inf]
    with x64():
        xs = jnp.asarray(x, jnp.float64)
        want = [jax.nn.relu(xs), jax.nn.gelu(xs), jax.nn.gelu(xs, approximate=False),
                jax.nn.silu(xs),
                jax.nn.softplus(xs), jax.nn.softmax(xs[1:]), jax.nn.softmax(xs[1:], axis=0),
                jax.nn.log_softmax(xs[1:], axis=(0, 1)),
                jax.nn.logsumexp(xs[1:], axis=1, keepdims=True),
                jax.nn.softmax(xs[1:], axis=None)]
    check(run(lambda v: (nn.relu(v), nn.gelu(v), nn.gelu(v, approximate=False), nn.silu(v),
                         nn.softplus(v),
                         nn.softmax(v[1:]), nn.softmax(v[1:], axis=0),
                         nn.log_softmax(v[1:], axis=(0, 1)),
                         nn.logsumexp(v[1:], axis=1, keepdims=True), nn.softmax(v[1:], axis=None)),
              x, paths=CHEAP),
          [np.asarray(w) for w in want], "f32", rtol=1e-5, atol=1e-6)
    labels = np.array([[0, 2, 5], [-1, 1, 3]], np.int32)
    for axis in (-1, 0, 1):
        want = np.asarray(jax.nn.one_hot(labels, 4, axis=axis))
        check(run(lambda v: nn.one_hot(v, 4, axis=axis), labels, paths=CHEAP), want, "f32")
    check(run(lambda v: nn.one_hot(v, 3, dtype="s8"), labels[0], paths=CHEAP),
          np.asarray(jax.nn.one_hot(labels[0], 3, dtype=jnp.int8)), "s8")
    check(run(lambda v: nn.relu(v), np.array([-2, 0, 3], np.int32), paths=CHEAP),
          np.array([0, 0, 3], np.int32), "s32")


# ----------------------------------------------------------------------------------------
# Gradients against jax.grad (compositions differentiate through their parts)
# ----------------------------------------------------------------------------------------
GRADS = [
    ("softmax", lambda x: nx.sum(nn.softmax(x) * nx.iota(x.shape, type="f32")),
     lambda x: jnp.sum(jax.nn.softmax(x) * jnp.arange(x.size, dtype=x.dtype).reshape(x.shape))),
    ("log_softmax", lambda x: nx.sum(nn.log_softmax(x, axis=0) ** 2),
     lambda x: jnp.sum(jax.nn.log_softmax(x, axis=0) ** 2)),
    ("logsumexp", lambda x: nx.sum(nx.logsumexp(x, axes=[1]) * 3.0),
     lambda x: jnp.sum(jsp.logsumexp(x, axis=1) * 3.0)),
    ("einsum", lambda x: nx.sum(nx.einsum("ij,kj,ik->i", x, x * 2.0, nx.sin(x @ x.T))),
     lambda x: jnp.sum(jnp.einsum("ij,kj,ik->i", x, x * 2.0, jnp.sin(x @ x.T)))),
    ("einsum_diag", lambda x: nx.sum(nx.einsum("ii->i", x @ x.T) ** 2),
     lambda x: jnp.sum(jnp.einsum("ii->i", x @ x.T) ** 2)),
    ("variance", lambda x: nx.sum(nx.variance(x, axes=[0], ddof=1)),
     lambda x: jnp.sum(jnp.var(x, axis=0, ddof=1))),
    ("standard_deviation", lambda x: nx.standard_deviation(x), lambda x: jnp.std(x)),
    ("tril_diag",
     lambda x: nx.sum(nx.tril(x, k=1) * 3.0) + nx.sum(nx.take_diagonal(x, offset=1) ** 2),
     lambda x: jnp.sum(jnp.tril(x, k=1) * 3.0) + jnp.sum(jnp.diagonal(x, 1) ** 2)),
    ("put_diagonal", lambda x: nx.sum(nx.put_diagonal(x, nx.exp(x[0, :3])) ** 2),
     lambda x: jnp.sum(x.at[jnp.arange(3), jnp.arange(3)].set(jnp.exp(x[0, :3])) ** 2)),
    ("gelu_silu", lambda x: nx.sum(nn.gelu(x) + nn.gelu(x, approximate=False) + nn.silu(x)),
     lambda x: jnp.sum(jax.nn.gelu(x) + jax.nn.gelu(x, approximate=False) + jax.nn.silu(x))),
    ("relu_softplus_at_0", lambda x: nx.sum(nn.relu(x - x[0, 0]) + nn.softplus(x - x[0, 0])),
     lambda x: jnp.sum(jax.nn.relu(x - x[0, 0]) + jax.nn.softplus(x - x[0, 0]))),
]


@pytest.mark.parametrize("name,nxf,jf", GRADS, ids=[g[0] for g in GRADS])
def test_grad_vs_jax(name, nxf, jf):
    x = rand("f32", (3, 4), ("grad", name))
    want = np.asarray(jax.grad(jf)(jnp.asarray(x)))
    check({"eager": grad(nxf)(nx.tensor(x)), "exla": jit(grad(nxf), compiler="exla")(nx.tensor(x))},
          want, "f32", rtol=1e-4, atol=1e-5, what=name)


@pytest.mark.parametrize("path", COMPILERS)
@pytest.mark.parametrize("name,nxf,jf", GRADS, ids=[g[0] for g in GRADS])
def test_jvp_vs_jax(name, nxf, jf, path):
    jvp_matches_jax(nxf, jf, (rand("f32", (3, 4), ("grad", name)),), path, 1e-4)


def test_bit_counts_are_not_differentiable():
    g = grad(lambda x: nx.sum(x * nx.as_type(nx.population_count(nx.as_type(x, "s32")),
                                             "f32")))(nx.tensor([3.0, 7.0]))
    assert g.tolist() == [2.0, 3.0]


# ----------------------------------------------------------------------------------------
# Errors (raised before anything reaches XLA, naming the argument)
# ----------------------------------------------------------------------------------------
ERRORS = [
    (lambda: nx.tril(nx.iota((6,))), ValueError, "at least 2 dimensions"),
    (lambda: nx.take_diagonal(nx.tensor([0, 1, 2])), ValueError, "rank 2 or higher"),
    (lambda: nx.take_diagonal(nx.iota((3, 3)), offset=3), ValueError,
     "less than length of axis 1 when positive, got: 3"),
    (lambda: nx.take_diagonal(nx.iota((3, 3)), offset=-4), ValueError,
     "axis 0 when negative, got: -4"),
    (lambda: nx.make_diagonal(nx.tensor([[0, 0], [0, 1]])), ValueError, "rank 1"),
    (lambda: nx.put_diagonal(nx.iota((3, 3, 3)), nx.iota((3,))), ValueError, "tensor of rank 2"),
    (lambda: nx.put_diagonal(nx.iota((3, 3)), nx.iota((3, 3))), ValueError, "diagonal of rank 1"),
    (lambda: nx.put_diagonal(nx.iota((3, 3)), nx.iota((2,))), ValueError,
     "length 3, got a diagonal tensor of length 2"),
    (lambda: nx.put_diagonal(nx.iota((3, 3)), nx.iota((3,)), offset=1), ValueError,
     "length 2, got"),
    (lambda: nx.put_diagonal(nx.iota((3, 3)), nx.iota((3,)), offset=4), ValueError,
     "when positive, got: 4"),
    (lambda: nx.flatten(nx.iota((1, 2, 3)), axes=[0, 2]), ValueError, "consecutive"),
    (lambda: nx.tile(nx.tensor([1, 2]), 1.0), ValueError, "repetitions must be a list"),
    (lambda: nx.tile(nx.tensor([1, 2]), [1, 1.0]), ValueError, "repetitions must be a list"),
    (lambda: nx.tile(nx.tensor([1, 2]), None), ValueError, "repetitions must be a list"),
    (lambda: nx.split(nx.tensor([1, 2, 3]), 3), ValueError, "integer greater than zero"),
    (lambda: nx.split(nx.tensor([1, 2, 3]), 0.9), ValueError, "a float such that"),
    (lambda: nx.split(nx.tensor([1, 2, 3]), "a"), TypeError, "a float or an integer"),
    (lambda: nx.linspace(0, 24, n=1.0), ValueError, "n to be a positive integer"),
    (lambda: nx.linspace(nx.tensor([[0, 1]]), nx.tensor([1, 2, 3]), n=2), ValueError, "same shape"),
    (lambda: nx.diff(nx.tensor([1, 2, 4, 7, 0]), order=-1), ValueError, "non-negative"),
    (lambda: nx.diff(nx.tensor(1), axis=0), ValueError, "diff"),
    (lambda: nx.log(nx.tensor(2.0), 1), ValueError, "different than 1"),
    (lambda: nx.weighted_mean(nx.iota((2, 3)), nx.iota((3,))), ValueError,
     "axes must be specified"),
    (lambda: nx.weighted_mean(nx.iota((2, 3)), nx.iota((3,)), axes=[0, 1]), ValueError,
     "rank equal"),
    (lambda: nx.covariance(nx.iota((3,))), ValueError, "rank at least 2"),
    (lambda: nx.covariance(nx.iota((3, 2)), nx.tensor(1)), ValueError, "mean of rank at least 1"),
    (lambda: nx.reflect(nx.iota((3,)), [(1, -1)]), ValueError, "non-negative"),
    (lambda: nx.to_batched(nx.tensor(1), 1), ValueError,
     r"to_batched: cannot batch a scalar tensor"),
    (lambda: nx.to_batched(nx.iota((3,)), 0), ValueError,
     "batch_size to be a positive integer, got 0"),
    (lambda: nx.to_batched(nx.iota((3,)), 2.0), ValueError,
     "batch_size to be a positive integer, got 2.0"),
    (lambda: nx.to_batched(nx.iota((3,)), 4), ValueError,
     r"batch_size 4 is larger than the first axis \(3\)"),
    (lambda: nx.to_batched(nx.iota((3,)), 1, leftover="pad"), ValueError,
     "'repeat' or 'discard', got 'pad'"),
    (lambda: nx.population_count(nx.tensor([0.0, 1.0])), TypeError,
     "population_count: expected x to have an integer type, got f32"),
    (lambda: nx.count_leading_zeros(nx.tensor([True])), TypeError,
     "count_leading_zeros: expected x to have an integer type"),
    (lambda: nx.einsum("ij,jk->ik", nx.iota((2, 3))), ValueError, "name 2 operand"),
    (lambda: nx.einsum("ij,jk->ik", nx.iota((2, 3)), nx.iota((4, 2))), ValueError,
     "subscript 'j' has sizes"),
    (lambda: nx.einsum("ij->k", nx.iota((2, 3))), ValueError, "does not appear"),
    (lambda: nx.einsum("ijk", nx.iota((2, 3))), ValueError, "names 3 axes"),
    (lambda: nx.einsum("i$", nx.iota((2, 3))), ValueError, "invalid character"),
    (lambda: nn.one_hot(nx.tensor([1]), 3, axis=3), ValueError, "one_hot"),
    (lambda: nn.softmax(nx.iota((2, 3)), axis=2), ValueError, "softmax"),
    (lambda: nx.tensor(nx.tensor([1, 2, 3], names=["column"]), names=["row"]), ValueError,
     "cannot merge names"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    f, exc, match = ERRORS[i]
    with pytest.raises(exc, match=match):
        f()


# ----------------------------------------------------------------------------------------
# JAX-exported programs through the StableHLO importer
# ----------------------------------------------------------------------------------------
def test_jax_exported_programs_load():
    x = rand("s32", (3, 4), "imp") * 1000
    for t in (jnp.int8, jnp.uint32, jnp.int64):
        a = np.asarray(x).astype(t)
        with x64():
            text = jax.jit(lambda v: (lax.population_count(v), lax.clz(v))).lower(a).as_text()
            want = [np.asarray(r) for r in jax.jit(lambda v: (lax.population_count(v),
                                                              lax.clz(v)))(a)]
        prog = load(text)
        for path, got in (("eager", prog(nx.tensor(a))),
                          ("exla", jit(prog, compiler="exla")(nx.tensor(a)))):
            assert [g.tolist() for g in got] == [w.tolist() for w in want], path
    f = rand("f32", (3, 4), "impf")
    for jf in (lambda v: jnp.einsum("ij,kj->ik", v, v), lambda v: jax.nn.softmax(v, axis=0),
               lambda v: jax.nn.gelu(v), lambda v: jnp.tril(v, 1)):
        text = jax.jit(jf).lower(f).as_text()
        np.testing.assert_allclose(load(text)(nx.tensor(f)).to_numpy(), np.asarray(jax.jit(jf)(f)),
                                   rtol=1e-5, atol=1e-6)


def test_nxpy_programs_read_back():
    from nxpy.compilers.exla import to_mlir
    text = to_mlir(lambda v: (nx.population_count(v), nx.count_leading_zeros(v)),
                   nx.template((4,), "u16"))
    assert "stablehlo.popcnt" in text and "stablehlo.count_leading_zeros" in text
    a = np.array([0, 1, 255, 65535], np.uint16)
    got = load(text)(nx.tensor(a))
    assert [g.tolist() for g in got] == [[0, 1, 8, 16], [16, 15, 8, 0]]


# ----------------------------------------------------------------------------------------
# Sharding: inputs sharded along the op's axis give the unsharded result, both compilers
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_sharded_along_the_reduced_axis(compiler):
    mesh = nx.Mesh("m", (2,))
    x = rand("f32", (4, 6), "shard")
    i = (rand("s32", (4, 6), "shardi") * 1000).astype(np.int32)

    def f(v, w):
        return (nx.logsumexp(v, axes=[0]), nn.softmax(v, axis=0), nx.einsum("ij,ik->jk", v, v),
                nx.take_diagonal(v), nx.population_count(w), nx.variance(v, axes=[0]))
    want = [r.to_numpy() for r in f(nx.tensor(x), nx.tensor(i))]
    ins = [{0: [0]}, {0: [0]}]
    args = [list(p) for p in zip(*[SH.shard(nx.tensor(a), mesh, s) for a, s in zip((x, i), ins)])]
    res = shard_jit(f, mesh, input_shardings=ins, output_shardings=[{}] * 6,
                    compiler=compiler)(args)
    assert len(res) == 2
    for per_device in res:
        for g, w in zip(per_device, want):
            np.testing.assert_allclose(g.to_numpy(), w, rtol=1e-5, atol=1e-6)
