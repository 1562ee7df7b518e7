"""``jax.nn.dot_product_attention``: scaled dot-product attention with ``jax.nn``'s shapes,
masks and grouped heads, as JAX's ``xla`` implementation computes it.

Shapes, in ``jax.nn``'s letters: the query is ``(B, T, N, H)`` (or ``(T, N, H)``), the key
and value ``(B, S, K, H)``; ``N`` query heads share ``K`` key/value heads in ``G = N // K``
groups (multi-head attention when ``K == N``, multi-query when ``K == 1``). The logits are
computed in f32 for 16-bit inputs (JAX's ``preferred_element_type``), scaled, biased and
masked with ``-0.7 * max`` of their type (capped at f32's), and the softmax always runs in
f32, as JAX's: so an f64 attention's probabilities are f32-accurate there too.

The grouped heads stay a dimension of their own: the two products are ``dot``\\ s batched
over ``(B, K)``, as JAX's ``vmap`` over the groups makes them, so the program XLA compiles
has JAX's shape of dots, and ``grad``, ``vmap`` and sharding see ordinary ops.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from .. import shape as S
from .. import types as T
from .common import stop_gradient, tensor
from .functions import logsumexp, softmax

__all__ = ["dot_product_attention"]

_F32 = T.Type("f", 32)
_S32 = T.Type("s", 32)


def _four_d(x, arg):
    """``x`` with leading unit dims up to rank 4 (``jax.nn``'s ``_ensure_4d``)."""
    if x.rank > 4:
        raise ValueError(f"dot_product_attention: expected {arg} to have rank at most 4, got "
                         f"shape {x.shape}")
    return O.reshape(x, (1,) * (4 - x.rank) + x.shape) if x.rank < 4 else x


def _check(x, arg, shape=None, type=None):
    if shape is not None and (x.rank != len(shape) or any(
            want != -1 and got != want for got, want in zip(x.shape, shape))):
        want = tuple("_" if d == -1 else d for d in shape)
        raise ValueError(f"dot_product_attention: expected {arg} to have shape {want} "
                         f"(_: any), got {x.shape}")
    if type is not None and x.type != type:
        raise TypeError(f"dot_product_attention: expected {arg} to have type {type}, got "
                        f"{x.type}")


def _logits_like(x, arg, logits):
    """A bias or mask (rank 4 after leading unit dims) checked against the logits' shape
    ``(B, N, T, S)``: each dim 1 or the logits' (JAX's broadcasting), named on a mismatch
    rather than by the ``add`` or ``select`` that would meet it."""
    x = _four_d(x, arg)
    if any(d != 1 and d != want for d, want in zip(x.shape, logits)):
        raise ValueError(f"dot_product_attention: expected {arg} to broadcast to the logits' "
                         f"shape (B, N, T, S) = {logits} (each dim 1 or that size, the heads "
                         f"dimension 1 or N), got shape {x.shape}")
    return x


def _grouped(t, n, k, g):
    """A bias or mask ``(b, n or 1, t, s)`` as ``(g, b, k, t, s)``, the logits' layout."""
    b, tn, tt, ts = t.shape
    if tn == 1:
        t = O.reshape(t, (b, 1, 1, tt, ts))
        t = O.broadcast(t, (b, 1, g, tt, ts))
    else:  # tn == n (checked by _logits_like)
        t = O.reshape(t, (b, k, g, tt, ts))
    return O.transpose(t, [2, 0, 1, 3, 4])


def _positions(n, axis, rank):
    """``iota`` of ``n`` positions along ``axis`` of a rank-``rank`` s32 tensor."""
    shape = [1] * rank
    shape[axis] = n
    return O.iota(tuple(shape), axis=axis, type=_S32)


def _keep(t, s, b, mask, is_causal, q_len, kv_len, window):
    """Where the logits ``(G, B, K, T, S)`` take part: the user's mask, causality, the
    local window and the sequence lengths, together (None when every logit does)."""
    keep = None

    def both(m):
        return m if keep is None else O.logical_and(keep, m)
    if mask is not None:
        keep = both(mask)
    q_pos, k_pos = _positions(t, 3, 5), _positions(s, 4, 5)
    if is_causal:
        keep = both(O.greater_equal(q_pos, k_pos))
    if window is not None:
        left, right = window
        keep = both(O.logical_and(O.less_equal(q_pos, k_pos + left),
                                  O.greater_equal(q_pos, k_pos - right)))
    if q_len is not None:
        keep = both(O.less(q_pos, O.reshape(q_len, (1, b, 1, 1, 1))))
    if kv_len is not None:
        keep = both(O.less(k_pos, O.reshape(kv_len, (1, b, 1, 1, 1))))
    return keep


def _large_negative(t):
    """JAX's masked logit: ``-0.7`` times the type's largest finite value, capped at f32's
    (the softmax runs in f32)."""
    return -0.7 * min(T.max_finite(t), T.max_finite(T.F32))


def _window(local_window_size):
    if local_window_size is None:
        return None
    if isinstance(local_window_size, int) and not isinstance(local_window_size, bool):
        return (local_window_size, local_window_size)
    if (isinstance(local_window_size, (tuple, list)) and len(local_window_size) == 2
            and all(isinstance(w, int) and not isinstance(w, bool)
                    for w in local_window_size)):
        return tuple(local_window_size)
    raise TypeError(f"dot_product_attention: expected local_window_size to be an int or a "
                    f"pair of ints, got {local_window_size!r}")


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size=None, implementation=None, return_residual=False):
    """``softmax(scale * query @ key^T + bias, masked) @ value`` per head, as
    ``jax.nn.dot_product_attention`` with ``implementation="xla"`` (``None`` means that
    too; ``"cudnn"`` is a ValueError: nxpy has no cuDNN kernel).

    ``query`` is ``(B, T, N, H)`` or ``(T, N, H)``; ``key`` and ``value`` ``(B, S, K, H)``
    or ``(S, K, H)``, of the query's type, with ``N`` a multiple of ``K`` (grouped heads).
    ``bias`` (added to the logits) and ``mask`` (pred: true where a logit takes part)
    broadcast to ``(B, N, T, S)`` (rank 4 after leading unit dims, heads 1 or ``N``).
    ``scale`` defaults to ``1 / sqrt(H)``; ``is_causal`` keeps key positions ``<=`` the
    query position; ``query_seq_lengths`` / ``key_value_seq_lengths`` (s32, shape ``(B,)``)
    mask padding (padded query rows come out 0); ``local_window_size`` ``(left, right)``
    (or one int for both) keeps keys within that window of the query position. With
    ``return_residual``, also returns the logsumexp of the masked logits, ``(B, T, N)``,
    held out of the gradient.

    >>> import nxpy as nx
    >>> q = nx.iota((2, 1, 2), type="f32") / 4      # (T, N, H): 2 positions, 1 head
    >>> out = dot_product_attention(q, q, q, is_causal=True)
    >>> out.shape, [round(v, 4) for v in out.to_numpy()[:, 0, 0].tolist()]
    ((2, 1, 2), [0.0, 0.3044])
    """
    op = "dot_product_attention"
    if implementation not in (None, "xla"):
        raise ValueError(f"{op}: expected implementation to be None or 'xla' (nxpy has no "
                         f"cuDNN kernel), got {implementation!r}")
    q, k, v = (tensor(x, op, arg) for x, arg in ((query, "query"), (key, "key"),
                                                 (value, "value")))
    out_shape = q.shape
    if not q.type.is_float:
        raise TypeError(f"{op}: expected query to have a float type, got {q.type}")
    q, k, v = _four_d(q, "query"), _four_d(k, "key"), _four_d(v, "value")
    b, s, kh, h = k.shape
    _check(v, "value", (b, s, kh, h), k.type)
    _check(q, "query", (b, -1, -1, h), k.type)
    t, n = q.shape[1], q.shape[2]
    if kh == 0 or n % kh:
        raise ValueError(f"{op}: the number of query heads must be a multiple of the key/"
                         f"value heads, got {n} and {kh}")
    g = n // kh
    if mask is not None:
        mask = _logits_like(tensor(mask, op, "mask"), "mask", (b, n, t, s))
        _check(mask, "mask", type=T.parse("pred"))
    if bias is not None:
        bias = _logits_like(tensor(bias, op, "bias"), "bias", (b, n, t, s))
    lengths = []
    for arg, x in (("query_seq_lengths", query_seq_lengths),
                   ("key_value_seq_lengths", key_value_seq_lengths)):
        if x is not None:
            x = tensor(x, op, arg)
            _check(x, arg, (b,), _S32)
        lengths.append(x)
    window = _window(local_window_size)
    is_causal = S.boolean(is_causal, f"{op}: is_causal")
    return_residual = S.boolean(return_residual, f"{op}: return_residual")
    if scale is None:
        scale = 1.0 / math.sqrt(h)
    elif isinstance(scale, bool) or np.ndim(scale) != 0 or not (
            isinstance(scale, (int, float, np.floating, np.integer))
            or getattr(getattr(scale, "type", None), "is_inexact", False)):
        raise TypeError(f"{op}: expected scale to be a real number or scalar float tensor (or "
                        f"None: 1 / sqrt(H)), got {scale!r} ({type(scale).__name__})")

    # logits (G, B, K, T, S): query (B, T, K, G, H) against key (B, S, K, H), batched
    # over (B, K), in f32 at least; the group dim first, as JAX lays it out: XLA drops a
    # unit G from the dots and lays it out major again, so anywhere else (B, K, T, G, S)
    # it copies the probabilities' cotangent to move it (one copy per attention)
    lt = T.merge(q.type, _F32)
    qg = O.reshape(q, (b, t, kh, g, h))
    logits = O.dot(O.as_type(qg, lt), [4], [0, 2], O.as_type(k, lt), [3], [0, 2])
    logits = O.transpose(logits, [3, 0, 1, 2, 4])
    logits = logits * O.tensor(scale, type=lt)
    if bias is not None:
        logits = O.as_type(logits + _grouped(bias, n, kh, g), lt)
    keep = _keep(t, s, b, None if mask is None else _grouped(mask, n, kh, g), is_causal,
                 lengths[0], lengths[1], window)
    if keep is not None:
        logits = O.select(keep, logits, O.tensor(_large_negative(lt), type=lt))
    logits = O.as_type(logits, _F32)
    probs = O.as_type(softmax(logits, axis=-1), k.type)
    # value (B, S, K, H) @ (G, B, K, T, S) -> (B, K, H, G, T) -> (B, T, N, H); value on
    # the left as JAX's einsum puts it: XLA then reads value in one layout for this dot
    # and the gradient's (B, K, H, S), where probs on the left needs a second copy
    encoded = O.dot(v, [1], [0, 2], probs, [4], [1, 2])
    encoded = O.reshape(O.transpose(encoded, [0, 4, 1, 3, 2]), (b, t, n, h))
    if lengths[0] is not None:
        rows = O.less(_positions(t, 1, 4), O.reshape(lengths[0], (b, 1, 1, 1)))
        encoded = encoded * O.as_type(rows, encoded.type)
    encoded = O.reshape(encoded, out_shape)
    if not return_residual:
        return encoded
    lse = O.as_type(logsumexp(logits, axis=-1), k.type)        # (G, B, K, T)
    lse = O.reshape(O.transpose(lse, [1, 3, 2, 0]), (b, t, n))
    return encoded, stop_gradient(O.reshape(lse, out_shape[:-1]))
