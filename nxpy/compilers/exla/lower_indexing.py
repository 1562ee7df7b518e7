"""EXLA lowerings of the index-tensor ops: ``gather`` → ``stablehlo.gather`` and
``indexed_add`` / ``indexed_put`` → ``stablehlo.scatter`` with an add / replace region,
with the dimension numbers JAX emits for ``jnp.take`` and ``x.at[i].add`` (see
docs/ops_indexing.md). slice/put_slice lower in :mod:`.lowering`.
"""
from __future__ import annotations

from ...defn.expr import Expr
from .lowering import Ctx, out_of, register_lowering
from .mlir import i64_array

__all__ = []


def _dims(fields) -> str:
    """``name = [..]`` entries of a dimension-numbers attribute; empty lists are left out
    (as JAX prints them), scalars always written."""
    parts = []
    for k, v in fields:
        if isinstance(v, int):
            parts.append(f"{k} = {v}")
        elif v:
            parts.append(f"{k} = [{', '.join(str(int(i)) for i in v)}]")
    return ", ".join(parts)


@register_lowering("gather")
def _gather(c: Ctx, e: Expr, x, indices):
    axes = list(e.attrs["axes"])
    b = len(indices.shape) - 1
    offset = [b + j for j in range(len(x.shape) - len(axes))]
    dn = _dims([("offset_dims", offset), ("collapsed_slice_dims", axes),
                ("start_index_map", axes), ("index_vector_dim", b)])
    sizes = [1 if a in axes else d for a, d in enumerate(x.shape)]
    return c.op("stablehlo.gather", [x, indices], out_of(e), {
        "dimension_numbers": f"#stablehlo.gather<{dn}>",
        "indices_are_sorted": "false",
        "slice_sizes": i64_array(sizes)})


@register_lowering("indexed_add", "indexed_put")
def _scatter(c: Ctx, e: Expr, target, indices, updates):
    axes = list(e.attrs["axes"])
    t = e.type
    target, updates = c.convert(target, t), c.convert(updates, t)
    window = list(range(1, len(updates.shape)))
    dn = _dims([("update_window_dims", window), ("inserted_window_dims", axes),
                ("scatter_dims_to_operand_dims", axes), ("index_vector_dim", 1)])
    if e.op == "indexed_add":
        region = c.scalar_region(t, 1, lambda s, old, new: [s.binop(
            "stablehlo.or" if t.is_pred else "stablehlo.add", old[0], new[0])])
    else:
        region = c.scalar_region(t, 1, lambda s, old, new: [new[0]])
    return c.op("stablehlo.scatter", [target, indices, updates], out_of(e), {
        "indices_are_sorted": "false",
        "scatter_dimension_numbers": f"#stablehlo.scatter<{dn}>",
        "unique_indices": "false"}, [region])
