"""Batching cases: nxpy's ``vmap`` against ``jax.vmap``, on per-example gradients.

The program: the gradient of one example's loss with respect to the weights of the MLP
of ``bench/grad.py`` (softmax cross-entropy of ``tanh(x @ w1 + b1) @ w2 + b2``), mapped
over the 256 examples of the batch: ``vmap(grad(loss), in_axes=(None, None, None, None,
0, 0))`` -- the per-example gradients of differential privacy or of influence functions,
256 gradients of each weight. Timed twice: trace + lower (no XLA compile), and a call of
the compiled program waiting for its 4 results. Each note gives both programs' sizes
(StableHLO ops, HLO instructions after XLA's optimizations), so a reader sees whether the
batched graphs differ.
"""
from __future__ import annotations


from .core import Pair, case
from .grad import CALL_AIM, CALL_TIMING, LOWER_AIM, _call_pair, _check, _mlp_arrays, _sizes

IN_AXES = (None, None, None, None, 0, 0)


def _example_loss(m):
    """One example's loss (``x`` f32[2], ``y`` f32[classes]) with op namespace ``m``."""
    def loss(w1, b1, w2, b2, x, y):
        logits = m.dot(m.tanh(m.dot(x, w1) + b1), w2) + b2
        top = m.reduce_max(logits) if m.__name__ == "nxpy" else m.max(logits)
        return m.sum((m.log(m.sum(m.exp(logits - top))) + top - logits) * y)
    return loss


def _per_example(m, grad, vmap):
    return vmap(grad(_example_loss(m), argnums=(0, 1, 2, 3)), in_axes=IN_AXES)


def _sides():
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.compilers.exla import to_mlir
    from nxpy.defn import grad, vmap

    arrays = _mlp_arrays()
    templates = [nx.template(a.shape, "f32") for a in arrays]
    specs = [jax.ShapeDtypeStruct(a.shape, jnp.float32) for a in arrays]

    def nxpy_lower():  # fresh functions on both sides: no trace or lowering cache hit
        return to_mlir(_per_example(nx, grad, vmap), *templates)

    def jax_lower():
        return jax.jit(_per_example(jnp, jax.grad, jax.vmap)).lower(*specs)

    return nxpy_lower, jax_lower, arrays


def _compiled():
    import jax
    import nxpy as nx
    from nxpy.defn import grad, jit, vmap
    nxpy_lower, jax_lower, arrays = _sides()
    nf = jit(_per_example(nx, grad, vmap), compiler="exla")
    jf = jax.jit(_per_example(jax.numpy, jax.grad, jax.vmap))
    nargs = [nx.tensor(a, backend="exla") for a in arrays]
    jargs = [jax.device_put(a, jax.devices()[0]) for a in arrays]
    out = nf(*nargs)
    assert out[0].shape == (arrays[4].shape[0],) + arrays[0].shape
    _check(out, jf(*jargs), rtol=2e-5)
    return (nf, nargs, jf, jargs), _sizes(nxpy_lower(), jax_lower())


TITLE = "per-example gradients of the MLP loss, vmap(grad) over 256 examples"
NOTE = ("vmap(grad(loss, argnums=(0, 1, 2, 3)), in_axes=(None,) * 4 + (0, 0)) of one "
        "example's softmax cross-entropy of tanh(x @ w1 + b1) @ w2 + b2 (x f32[2], 32 "
        "hidden units, 2 classes), over x f32[256][2], y f32[256][2]: 4 results, "
        "f32[256][2][32] ... f32[256][2]")


@case("vmap_trace_lower", f"trace+lower: {TITLE}", aim=LOWER_AIM)
def vmap_trace_lower(cfg):
    nxpy_lower, jax_lower, _ = _sides()
    _, info = _compiled()
    return Pair(nxpy=nxpy_lower, jax=jax_lower,
                info=f"{NOTE}. nxpy: to_mlir(f, *templates) (trace, differentiate, batch, "
                     f"StableHLO text); JAX: jax.jit(f).lower(*specs), .as_text() not "
                     f"included. " + info)


@case("vmap_call", f"call: compiled {TITLE}", aim=CALL_AIM, **CALL_TIMING)
def vmap_call(cfg):
    (nf, nargs, jf, jargs), info = _compiled()
    return _call_pair(nf, nargs, jf, jargs,
                      info=f"{NOTE}. jit(f, compiler='exla') on EXLA tensors vs jax.jit(f) "
                           f"on device arrays, waiting for the 4 results. " + info)
