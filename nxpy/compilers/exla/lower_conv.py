"""Lowering of ``conv``: one ``stablehlo.convolution`` (dimension numbers from Nx's
permutations, feature/batch group counts, lhs/rhs dilation, padding), as JAX emits for
``lax.conv_general_dilated``. See docs/ops_windows.md."""
from __future__ import annotations

from ...defn.expr import Expr
from .lowering import Ctx, out_of, register_lowering
from .mlir import dense_i64, i64_array

__all__ = ["dimension_numbers"]


def _roles(perm, first, second):
    roles = [""] * len(perm)
    roles[perm[0]], roles[perm[1]] = first, second
    for i, ax in enumerate(perm[2:]):
        roles[ax] = str(i)
    return "[" + ", ".join(roles) + "]"


def dimension_numbers(ip, kp, op) -> str:
    """``#stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>`` for Nx's input, kernel
    and output permutations (each lists the axes holding batch/feature then spatial dims)."""
    return (f"#stablehlo.conv<{_roles(ip, 'b', 'f')}x{_roles(kp, 'o', 'i')}->"
            f"{_roles(op, 'b', 'f')}>")


@register_lowering("conv")
def _conv(c: Ctx, e: Expr, x, k):
    at = e.attrs
    x, k = c.convert(x, e.type), c.convert(k, e.type)
    n = len(at["strides"])
    return c.op("stablehlo.convolution", [x, k], out_of(e), {
        "batch_group_count": f"{at['batch_group_size']} : i64",
        "dimension_numbers": dimension_numbers(at["input_permutation"],
                                               at["kernel_permutation"],
                                               at["output_permutation"]),
        "feature_group_count": f"{at['feature_group_size']} : i64",
        "lhs_dilation": i64_array(at["input_dilation"]),
        "padding": dense_i64(at["padding"]) if n else "dense<> : tensor<0x2xi64>",
        "precision_config": "[#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]",
        "rhs_dilation": i64_array(at["kernel_dilation"]),
        "window_strides": i64_array(at["strides"])})
