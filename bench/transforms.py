"""Transform cases: nxpy's ``jvp``, ``scan`` (and its gradient) and ``checkpoint`` against
``jax.jvp``, ``jax.lax.scan`` and ``jax.checkpoint`` (issue 26).

Four programs, each timed twice as in ``bench/grad.py`` (trace + lower to StableHLO, no
XLA compile, fresh functions on both sides every call; and a call of the compiled
program, waiting for its results):

* ``jvp`` of the 200-op elementwise chain (``bench/single_device.py``), primal and tangent
  f32[4][4];
* an RNN cell ``h = tanh(h @ W + x @ U + b)`` scanned over 1,000 steps (hidden 32, batch
  8, input 16): the final carry and the sum of the stacked ``h``'s;
* the gradient of a scalar loss of that RNN (the sum of the squares of its ``h``'s) with
  respect to ``(W, U, b)``: a forward scan stacking the carries, a reverse scan;
* the gradient of a 64-layer tanh MLP with ``checkpoint`` around each layer.

Before anything is timed each case checks nxpy's results against JAX's, and its note
gives both programs' sizes (StableHLO ops; HLO instructions after XLA's optimizations).
"""
from __future__ import annotations

import numpy as np

from .core import Pair, case
from .grad import CALL_TIMING, LOWER_AIM, _call_pair, _check, _sizes
from .single_device import CHAIN_BLOCKS, chain

CALL_AIM_TRANSFORMS = 1.1

RNN_STEPS, RNN_BATCH, RNN_INPUT, RNN_HIDDEN = 1000, 8, 16, 32
REMAT_LAYERS, REMAT_WIDTH, REMAT_BATCH = 64, 512, 64


# ----------------------------------------------------------------------------------------
# One program on both sides
# ----------------------------------------------------------------------------------------
def _tree_map(f, tree):
    import jax
    return jax.tree_util.tree_map(f, tree)


def _lowerers(nx_fn, jax_fn, arrays):
    """``(nxpy_lower, jax_lower)``: trace + lower ``nx_fn()`` and ``jax_fn()`` (factories
    of fresh functions: no trace or lowering cache hit) for arguments like ``arrays`` (f32
    NumPy arrays, containers allowed)."""
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.compilers.exla import to_mlir

    templates = _tree_map(lambda a: nx.template(a.shape, "f32"), arrays)
    specs = _tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, jnp.float32), arrays)

    def nxpy_lower():
        return to_mlir(nx_fn(), *templates)

    def jax_lower():
        return jax.jit(jax_fn()).lower(*specs)

    return nxpy_lower, jax_lower


def _compiled(nx_fn, jax_fn, arrays, tol):
    """Both functions compiled (EXLA; ``jax.jit``) and their arguments on device 0, after
    checking nxpy's results against JAX's (``tol``: ``(rtol,)`` or ``(rtol, atol)``); and
    the programs' sizes."""
    import jax
    import nxpy as nx
    from nxpy.defn import jit
    nf, jf = jit(nx_fn(), compiler="exla"), jax.jit(jax_fn())
    nargs = _tree_map(lambda a: nx.tensor(a, backend="exla"), arrays)
    jargs = _tree_map(lambda a: jax.device_put(a, jax.devices()[0]), arrays)
    out = jax.tree_util.tree_leaves(nf(*nargs), is_leaf=lambda t: isinstance(t, nx.Tensor))
    _check(out, jf(*jargs), *tol)
    nxpy_lower, jax_lower = _lowerers(nx_fn, jax_fn, arrays)
    return (nf, nargs, jf, jargs), _sizes(nxpy_lower(), jax_lower())


LOWER_NOTE = ("nxpy: to_mlir(f, *templates) (trace, transform, StableHLO text); JAX: "
              "jax.jit(f).lower(*specs), .as_text() not included. ")
CALL_NOTE = ("jit(f, compiler='exla') on EXLA tensors vs jax.jit(f) on device arrays, "
             "waiting for the results. ")


def _cases(name, title, note, program, lower_extra=None):
    """Registers cases ``{name}_trace_lower`` and ``{name}_call`` of ``program() ->
    (nx_fn, jax_fn, arrays, tol)``; ``lower_extra(nxpy_lower)``, if given, checks the
    module and returns more of the trace+lower case's note."""
    @case(f"{name}_trace_lower", f"trace+lower: {title}", aim=LOWER_AIM)
    def trace_lower(cfg):
        nx_fn, jax_fn, arrays, tol = program()
        nxpy_lower, jax_lower = _lowerers(nx_fn, jax_fn, arrays)
        _, sizes = _compiled(nx_fn, jax_fn, arrays, tol)
        extra = lower_extra(nxpy_lower) if lower_extra else ""
        return Pair(nxpy=nxpy_lower, jax=jax_lower,
                    info=f"{note}. {LOWER_NOTE}{sizes}{extra}")

    @case(f"{name}_call", f"call: compiled {title}", aim=CALL_AIM_TRANSFORMS, **CALL_TIMING)
    def call(cfg):
        (nf, nargs, jf, jargs), sizes = _compiled(*program())
        return _call_pair(nf, nargs, jf, jargs, info=f"{note}. {CALL_NOTE}{sizes}")


# ----------------------------------------------------------------------------------------
# (a) jvp of the 200-op chain
# ----------------------------------------------------------------------------------------
def _jvp_program():
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.defn import jvp

    x = np.arange(16, dtype=np.float32).reshape(4, 4) / 7 - 1
    t = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    return (lambda: lambda x, t: jvp(lambda x: chain(nx, x), (x,), (t,)),
            lambda: lambda x, t: jax.jvp(lambda x: chain(jnp, x), (x,), (t,)),
            [x, t], (1e-5,))


JVP_TITLE = f"jvp of the {4 * CHAIN_BLOCKS}-op chain, f32[4][4]"
JVP_NOTE = ("jvp(lambda x: chain(x), (x,), (t,)) vs jax.jvp, primal and tangent f32[4][4]: "
            "2 results")

_cases("jvp", JVP_TITLE, JVP_NOTE, _jvp_program)


# ----------------------------------------------------------------------------------------
# (b) scan: an RNN cell over 1,000 steps, and its gradient
# ----------------------------------------------------------------------------------------
def _rnn(m, scan):
    """``run(w, u, b, h0, xs) -> (h, hs)`` with op namespace ``m`` and ``scan``."""
    def run(w, u, b, h0, xs):
        def cell(h, x):
            h = m.tanh(m.dot(h, w) + m.dot(x, u) + b)
            return h, h
        return scan(cell, h0, xs)
    return run


def _rnn_forward(m, scan):
    def f(w, u, b, h0, xs):
        h, hs = _rnn(m, scan)(w, u, b, h0, xs)
        return h, m.sum(hs)
    return f


def _rnn_grad(m, scan, grad):
    def loss(w, u, b, h0, xs):
        _, hs = _rnn(m, scan)(w, u, b, h0, xs)
        return m.sum(hs * hs)
    return grad(loss, argnums=(0, 1, 2))


def _rnn_arrays():
    rng = np.random.default_rng(0)
    t, n, i, h = RNN_STEPS, RNN_BATCH, RNN_INPUT, RNN_HIDDEN
    return [(rng.normal(size=(h, h)) / np.sqrt(h)).astype(np.float32),
            (rng.normal(size=(i, h)) / np.sqrt(i)).astype(np.float32),
            rng.normal(0, 0.1, h).astype(np.float32), np.zeros((n, h), np.float32),
            rng.normal(size=(t, n, i)).astype(np.float32)]


def _scan_program():
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.defn import scan
    return (lambda: _rnn_forward(nx, scan), lambda: _rnn_forward(jnp, jax.lax.scan),
            _rnn_arrays(), (1e-4,))


def _scan_grad_program():
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.defn import grad, scan
    return (lambda: _rnn_grad(nx, scan, grad),
            lambda: _rnn_grad(jnp, jax.lax.scan, jax.grad), _rnn_arrays(), (2e-4,))


RNN_SHAPES = (f"W f32[{RNN_HIDDEN}][{RNN_HIDDEN}], U f32[{RNN_INPUT}][{RNN_HIDDEN}], b "
              f"f32[{RNN_HIDDEN}], h0 f32[{RNN_BATCH}][{RNN_HIDDEN}], xs "
              f"f32[{RNN_STEPS}][{RNN_BATCH}][{RNN_INPUT}]")
SCAN_TITLE = f"scan of an RNN cell over {RNN_STEPS:,} steps, hidden {RNN_HIDDEN}"
SCAN_NOTE = (f"scan(cell, h0, xs) vs jax.lax.scan, cell(h, x) = (h', h') with h' = "
             f"tanh(h @ W + x @ U + b), {RNN_SHAPES}; results: the final h and the sum of "
             f"the stacked h's")
SCAN_GRAD_TITLE = f"grad of an RNN over {RNN_STEPS:,} steps (scan), w.r.t. W, U, b"
SCAN_GRAD_NOTE = (f"grad(loss, argnums=(0, 1, 2)) vs jax.grad, loss = sum(hs * hs) of the "
                  f"stacked h's of scan(cell, h0, xs), cell as in scan_trace_lower, "
                  f"{RNN_SHAPES}; 3 results")

_cases("scan", SCAN_TITLE, SCAN_NOTE, _scan_program)
_cases("scan_grad", SCAN_GRAD_TITLE, SCAN_GRAD_NOTE, _scan_grad_program)


# ----------------------------------------------------------------------------------------
# (c) remat: the gradient of a 64-layer tanh MLP with checkpoint per layer
# ----------------------------------------------------------------------------------------
def _remat_loss(m, ck):
    layer = ck(lambda w, x: m.tanh(m.dot(x, w)))

    def loss(ws, x):
        for w in ws:
            x = layer(w, x)
        return m.sum(x * x)
    return loss


def _remat_program(checkpointed=True):
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.defn import checkpoint, grad

    def same(f):
        return f
    rng = np.random.default_rng(0)
    ws = [(rng.normal(size=(REMAT_WIDTH, REMAT_WIDTH)) / np.sqrt(REMAT_WIDTH)).astype(
        np.float32) for _ in range(REMAT_LAYERS)]
    x = rng.normal(size=(REMAT_BATCH, REMAT_WIDTH)).astype(np.float32)
    return (lambda: grad(_remat_loss(nx, checkpoint if checkpointed else same)),
            lambda: jax.grad(_remat_loss(jnp, jax.checkpoint if checkpointed else same)),
            [ws, x], (1e-4, 1e-4))


def _remat_memory():
    """Peak bytes (XLA's temporaries + outputs) of the compiled gradients, plain and
    checkpointed, on both sides."""
    from nxpy import pjrt
    out = {}
    for ck in (False, True):
        nx_fn, jax_fn, arrays, _ = _remat_program(ck)
        nxpy_lower, jax_lower = _lowerers(nx_fn, jax_fn, arrays)
        m = pjrt.memory_stats(pjrt.compile(nxpy_lower(), [0]))
        j = jax_lower().compile().memory_analysis()
        out[ck] = (m["temp"] + m["output"], j.temp_size_in_bytes + j.output_size_in_bytes)
    return out


REMAT_TITLE = f"grad of a {REMAT_LAYERS}-layer tanh MLP, checkpoint per layer"
REMAT_NOTE = (f"grad of sum(x * x) after {REMAT_LAYERS} layers x = tanh(x @ w), w "
              f"f32[{REMAT_WIDTH}][{REMAT_WIDTH}], x f32[{REMAT_BATCH}][{REMAT_WIDTH}], "
              f"each layer in checkpoint (jax.checkpoint); {REMAT_LAYERS} results")


def _remat_extra(nxpy_lower):
    assert nxpy_lower().count("stablehlo.optimization_barrier") >= REMAT_LAYERS - 1
    mem = _remat_memory()
    def mib(b):
        return f"{b / 2**20:.1f} MiB"
    return (f". Compiled peak (temporaries + outputs), nxpy vs JAX: plain "
            f"{mib(mem[False][0])} vs {mib(mem[False][1])}, checkpointed "
            f"{mib(mem[True][0])} vs {mib(mem[True][1])} (the per-layer residuals are the "
            f"layers' inputs either way, and XLA keeps them in the gradients' output "
            f"buffers)")


_cases("remat", REMAT_TITLE, REMAT_NOTE, _remat_program, lower_extra=_remat_extra)
