"""A character-level GPT trained with nxpy's public API: one device, or a 2x2 mesh with the
batch over "data" and the heads and MLP columns over "model". Run with ``make gpt`` (one
device) or ``make gpt ARGS="--mesh 2x2"``; ``python examples/gpt.py --help`` lists the
options. examples/gpt_jax.py is the same model in ``jax.numpy`` (tests/test_gpt.py and
bench/gpt.py compare the two step for step).

The model (GPT-2 shaped): a byte vocabulary (256 tokens), token + learned position
embeddings, ``layers`` pre-LayerNorm blocks (causal multi-head attention through
``nxpy.nn.dot_product_attention``, a GELU MLP 4x wide), a final LayerNorm and the output
projection tied to the token embedding. The blocks' parameters are stacked along a
leading ``layers`` axis and the stack runs as one ``scan`` over them (``--remat``: each
block under ``checkpoint``, its activations recomputed in the backward pass).

Training: AdamW (written below in nxpy, the default; ``--optimizer optax``: optax's
``adamw`` called through ``nxpy.interop.from_jax`` in the same compiled step), a linear
warmup then a cosine decay of the learning rate, gradients clipped by their global norm,
weight decay on the matrices only. The corpus is Tiny Shakespeare (examples/data/,
public domain), 90 % train and 10 % validation; batches are random windows drawn with a
NumPy generator seeded by ``(seed, step)`` and the parameters are drawn with
``nxpy.random`` from ``seed``, so a run is deterministic and a resumed run continues
bit-identically.

Parallelism (``--mesh 2x2``, 4 host CPU devices): Megatron style on the global view. The
parameters and the optimizer state are placed once as sharded tensors (the query, key,
value and first MLP matrices split by columns over "model", so each device holds half
the heads and half the MLP; the output projections split by rows), the batch over
"data"; ``with_sharding_constraint`` pins the activations (heads over "model", the batch
over "data") and XLA's partitioner inserts the all-reduces. The step donates the
parameters and the optimizer state, so they are updated in place on every device; only
the batch goes in and the loss comes out.

Each progress line gives the step, the training loss, the validation loss, tokens per
second, the step time, the step's device memory (XLA's, ``Compiled.memory_stats``) and
the process's peak memory; on a terminal a progress bar runs while the step compiles and
during evaluation. ``--plot`` writes the loss curves (matplotlib: the ``plot`` extra,
which ``make gpt`` installs), ``--checkpoint`` saves the parameters, the optimizer state
and the step with ``nx.save`` (``--resume`` continues from it), and at the end text is
sampled with a KV cache (a ``scan`` over positions, ``put_slice`` into the cache), with a
temperature and top-k.

Across processes (``python -m nxpy.launch -n 2 --local-devices 2 examples/gpt.py --mesh
2x2``: each process drives its 2 devices, one row of the mesh, and places its rows of
the batch, which every process draws alike): every process runs this same script and
the same steps, and the losses are the one-process run's. Process 0 alone prints,
plots, samples and writes the checkpoint (the tensors whose shards live on several
processes are gathered first, a collective every process joins); ``--resume`` has every
process read it, so on several hosts put it where they all see it.
"""

import argparse
import json
import math
import os
import resource
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import nxpy as nx
import nxpy.random as nr
from nxpy import P, distributed, pjrt
from nxpy.defn import (checkpoint, compile, jit, psum, scan, shard_map, value_and_grad,
                       with_sharding_constraint)
from nxpy.defn.tree import flatten, unflatten
from nxpy.nn import dot_product_attention, gelu, log_softmax

CORPUS = Path(__file__).resolve().parent / "data" / "tinyshakespeare.txt"
VOCAB = 256                      # bytes
pjrt.devices()   # nxpy starts XLA (8 host CPU devices) before anything imports JAX
DECAYED = ("wte", "wpe", "wq", "wk", "wv", "wo", "w1", "w2")   # weight decay on these


@dataclass(frozen=True)
class Config:
    layers: int = 4
    width: int = 128
    heads: int = 4
    context: int = 128
    batch: int = 16
    steps: int = 300
    lr: float = 3e-3
    min_lr: float = 3e-4
    warmup: int = 30
    weight_decay: float = 0.1
    clip: float = 1.0
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    seed: int = 0
    remat: bool = False


# ----------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------
def corpus(path=CORPUS):
    """``(train, val)``: the bytes of the text as uint8 arrays, split 90/10."""
    data = np.frombuffer(Path(path).read_bytes(), np.uint8)
    n = int(len(data) * 0.9)
    return data[:n], data[n:]


def batch(data, cfg, step, *, seed=None):
    """``(x, y)`` s32[batch][context]: random windows of ``data`` and the windows shifted by
    one, drawn by a generator seeded with ``(seed, step)`` (the same on every run)."""
    rng = np.random.default_rng([cfg.seed if seed is None else seed, step])
    starts = rng.integers(0, len(data) - cfg.context - 1, cfg.batch)
    idx = starts[:, None] + np.arange(cfg.context + 1)
    w = data[idx].astype(np.int32)
    return w[:, :-1], w[:, 1:]


# ----------------------------------------------------------------------------------------
# Parameters: a dict; the blocks' parameters stacked along a leading `layers` axis
# ----------------------------------------------------------------------------------------
def init_params(cfg):
    """The initial parameters (nxpy tensors on the NumPy backend), drawn with
    ``nxpy.random`` from ``cfg.seed``: normal(0, 0.02) matrices (the output projections
    scaled by 1/sqrt(2 * layers), as GPT-2), zero biases, unit LayerNorm gains."""
    L, D = cfg.layers, cfg.width
    keys = nr.split(nr.key(cfg.seed), 8)
    out = 0.02 / math.sqrt(2 * L)

    def normal(i, shape, std=0.02):
        return nr.normal_split(keys[i], 0.0, std, shape=shape, type="f32")
    zeros, ones = (lambda *s: nx.broadcast(nx.tensor(0.0), s)), (
        lambda *s: nx.broadcast(nx.tensor(1.0), s))
    blocks = {"ln1_g": ones(L, D), "ln1_b": zeros(L, D),
              "wq": normal(2, (L, D, D)), "wk": normal(3, (L, D, D)),
              "wv": normal(4, (L, D, D)), "wo": normal(5, (L, D, D), out),
              "bo": zeros(L, D),
              "ln2_g": ones(L, D), "ln2_b": zeros(L, D),
              "w1": normal(6, (L, D, 4 * D)), "b1": zeros(L, 4 * D),
              "w2": normal(7, (L, 4 * D, D), out), "b2": zeros(L, D)}
    return {"wte": normal(0, (VOCAB, D)), "wpe": normal(1, (cfg.context, D), 0.01),
            "blocks": blocks, "lnf_g": ones(D), "lnf_b": zeros(D)}


def param_specs(params):
    """The layout of each parameter on a ("data", "model") mesh: heads (the columns of
    wq/wk/wv, the rows of wo) and the MLP's hidden units over "model"; the rest
    replicated."""
    cols, rows = P(None, None, "model"), P(None, "model", None)
    by_name = {"wq": cols, "wk": cols, "wv": cols, "wo": rows, "w1": cols,
               "b1": P(None, "model"), "w2": rows}
    return tree_map_named(lambda name, p: by_name.get(name, P()), params)


def tree_map_named(f, tree, *rest):
    """``f(name, leaf, *leaves)`` over a dict of dicts (the name: the leaf's key)."""
    return {k: (tree_map_named(f, v, *(r[k] for r in rest)) if isinstance(v, dict)
                else f(k, v, *(r[k] for r in rest))) for k, v in tree.items()}


def tree_map(f, tree, *rest):
    return tree_map_named(lambda _, *leaves: f(*leaves), tree, *rest)


def leaves(tree):
    return [x for v in tree.values() for x in (leaves(v) if isinstance(v, dict) else [v])]


# ----------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------
def layer_norm(x, g, b, eps=1e-5):
    mu = nx.mean(x, axes=[-1], keep_axes=True)
    var = nx.mean((x - mu) ** 2, axes=[-1], keep_axes=True)
    return (x - mu) * nx.rsqrt(var + eps) * g + b


def _constrain(x, spec, mesh):
    return x if mesh is None else with_sharding_constraint(x, spec)


def block(x, p, cfg, mesh=None):
    """One pre-LayerNorm transformer block on ``x`` f32[B][T][D]."""
    B, T, D = x.shape
    H = cfg.heads
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])

    def heads(w):   # (B, T, H, D/H), the heads over "model"
        return _constrain(nx.reshape(nx.dot(h, w), (B, T, H, D // H)),
                          P("data", None, "model", None), mesh)
    a = dot_product_attention(heads(p["wq"]), heads(p["wk"]), heads(p["wv"]),
                              is_causal=True)
    x = x + nx.dot(nx.reshape(a, (B, T, D)), p["wo"]) + p["bo"]
    x = _constrain(x, P("data", None, None), mesh)
    h = layer_norm(x, p["ln2_g"], p["ln2_b"])
    h = _constrain(gelu(nx.dot(h, p["w1"]) + p["b1"]), P("data", None, "model"), mesh)
    x = x + nx.dot(h, p["w2"]) + p["b2"]
    return _constrain(x, P("data", None, None), mesh)


def logits_fn(params, tokens, cfg, mesh=None):
    """f32[B][T][VOCAB]: the next-byte logits for ``tokens`` s32[B][T]."""
    T = tokens.shape[1]
    x = nx.take(params["wte"], tokens, axis=0) + nx.slice(params["wpe"], [0, 0],
                                                          [T, cfg.width])
    x = _constrain(x, P("data", None, None), mesh)
    f = checkpoint(block, static_argnums=(2, 3)) if cfg.remat else block
    x, _ = scan(lambda x, p: (f(x, p, cfg, mesh), None), x, params["blocks"])
    x = layer_norm(x, params["lnf_g"], params["lnf_b"])
    return nx.dot(x, [2], params["wte"], [1])        # tied output embedding


def loss_fn(params, x, y, cfg, mesh=None):
    """The mean cross-entropy of the next byte."""
    logp = log_softmax(logits_fn(params, x, cfg, mesh), axis=-1)
    picked = nx.take_along_axis(logp, nx.reshape(y, y.shape + (1,)), axis=2)
    return -nx.mean(picked)


def shard_map_loss(cfg, mesh, params):
    """The same loss on the local view (``--shard-map``): a ``shard_map`` whose body sees
    its device's rows of the batch, its heads and its MLP columns, and writes out the
    collectives the partitioner inserts on the global view: a ``psum`` over "model" after
    each output projection (the rows of wo and w2), a ``psum`` over "data" of the loss."""
    n_model = mesh.shape[1]

    def body(params, x, y):
        B, T = x.shape
        D, Hl = cfg.width, cfg.heads // n_model
        Dh = D // cfg.heads
        h0 = nx.take(params["wte"], x, axis=0) + nx.slice(params["wpe"], [0, 0], [T, D])

        def blk(x, p):
            h = layer_norm(x, p["ln1_g"], p["ln1_b"])
            q, k, v = (nx.reshape(nx.dot(h, p[w]), (B, T, Hl, Dh)) for w in ("wq", "wk", "wv"))
            a = nx.reshape(dot_product_attention(q, k, v, is_causal=True), (B, T, Hl * Dh))
            x = x + psum(nx.dot(a, p["wo"]), "model") + p["bo"]
            h = gelu(nx.dot(layer_norm(x, p["ln2_g"], p["ln2_b"]), p["w1"]) + p["b1"])
            return x + psum(nx.dot(h, p["w2"]), "model") + p["b2"]
        f = checkpoint(blk) if cfg.remat else blk
        h, _ = scan(lambda h, p: (f(h, p), None), h0, params["blocks"])
        h = layer_norm(h, params["lnf_g"], params["lnf_b"])
        logp = log_softmax(nx.dot(h, [2], params["wte"], [1]), axis=-1)
        picked = nx.take_along_axis(logp, nx.reshape(y, y.shape + (1,)), axis=2)
        return -psum(nx.sum(picked), "data") / (B * mesh.shape[0] * T)
    return shard_map(body, mesh, in_specs=(param_specs(params), P("data", None),
                                           P("data", None)), out_specs=P())


# ----------------------------------------------------------------------------------------
# The optimizer: AdamW in nxpy, or optax's through from_jax
# ----------------------------------------------------------------------------------------
def schedule(t, cfg):
    """The learning rate at step ``t`` (an s32 tensor, from 0): a linear warmup from 0 to
    ``lr`` over ``warmup`` steps, then a cosine decay to ``min_lr`` at ``steps`` (as
    ``optax.warmup_cosine_decay_schedule``)."""
    t = nx.as_type(t, "f32")
    warm = cfg.lr * nx.min(t, float(cfg.warmup)) / max(cfg.warmup, 1)
    decay = max(cfg.steps - cfg.warmup, 1)
    frac = nx.clip(t - cfg.warmup, 0.0, float(decay)) / decay
    alpha = cfg.min_lr / cfg.lr
    cos = cfg.lr * ((1 - alpha) * 0.5 * (1 + nx.cos(math.pi * frac)) + alpha)
    return nx.select(t < cfg.warmup, warm, cos)


def clip_by_global_norm(grads, max_norm):
    """The gradients scaled so that their global norm is at most ``max_norm`` (as
    ``optax.clip_by_global_norm``), and the norm."""
    norm = nx.sqrt(sum(nx.sum(g * g) for g in leaves(grads)))
    return tree_map(lambda g: nx.select(norm < max_norm, g, g / norm * max_norm),
                    grads), norm


def adamw_init(params):
    zeros = tree_map(lambda p: nx.multiply(p, 0.0), params)
    return {"m": zeros, "v": tree_map(lambda p: nx.multiply(p, 0.0), params),
            "t": nx.tensor(0, type="s32")}


def adamw_update(grads, state, params, cfg):
    """One AdamW step (``optax.adamw``'s arithmetic: bias-corrected moments, decoupled
    weight decay on the matrices): ``(new_params, new_state)``."""
    t = state["t"] + 1
    lr = schedule(state["t"], cfg)
    tf = nx.as_type(t, "f32")
    c1, c2 = 1 - nx.pow(cfg.beta1, tf), 1 - nx.pow(cfg.beta2, tf)
    m = tree_map(lambda m, g: cfg.beta1 * m + (1 - cfg.beta1) * g, state["m"], grads)
    v = tree_map(lambda v, g: cfg.beta2 * v + (1 - cfg.beta2) * g * g, state["v"], grads)

    def update(name, p, m, v):
        u = (m / c1) / (nx.sqrt(v / c2) + cfg.eps)
        if name in DECAYED:
            u = u + cfg.weight_decay * p
        return p - lr * u
    return tree_map_named(update, params, m, v), {"m": m, "v": v, "t": t}


def optax_optimizer(cfg):
    """optax's AdamW with the same schedule, clipping and weight-decay mask."""
    import optax
    sched = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, cfg.warmup,
                                               max(cfg.steps, cfg.warmup + 1),
                                               cfg.min_lr)
    return optax.chain(optax.clip_by_global_norm(cfg.clip),
                       optax.adamw(sched, cfg.beta1, cfg.beta2, cfg.eps,
                                   weight_decay=cfg.weight_decay,
                                   mask=lambda p: decay_mask(p)))


def decay_mask(params):
    return tree_map_named(lambda name, _: name in DECAYED, params)


# ----------------------------------------------------------------------------------------
# The training step, compiled once
# ----------------------------------------------------------------------------------------
class Trainer:
    """The model's step, evaluation and sampling programs for ``cfg`` on ``mesh`` (None:
    one device) with ``compiler`` ("exla" or "evaluator"); ``optimizer``: "adamw" (nxpy)
    or "optax"."""

    def __init__(self, cfg, *, mesh=None, compiler="exla", optimizer="adamw",
                 local_view=False):
        self.cfg, self.mesh, self.compiler, self.optimizer = cfg, mesh, compiler, optimizer
        self.backend = "exla" if compiler == "exla" else "numpy"
        if local_view:          # --shard-map: the loss written on the local view
            if mesh is None:
                raise ValueError("Trainer: local_view (--shard-map) needs a mesh")
            local = shard_map_loss(cfg, mesh, init_params(cfg))

            def loss_fn(params, x, y, cfg, mesh):
                return local(params, x, y)
        else:
            loss_fn = globals()["loss_fn"]
        if optimizer == "optax":
            from nxpy.interop import from_jax
            import optax
            tx = optax_optimizer(cfg)
            self._tx = tx
            update, apply = from_jax(tx.update), from_jax(optax.apply_updates)

            def step(params, opt_state, x, y):
                loss, grads = value_and_grad(loss_fn)(params, x, y, cfg, mesh)
                updates, opt_state = update(grads, opt_state, params)
                return apply(params, updates), opt_state, loss
        elif optimizer == "adamw":
            def step(params, opt_state, x, y):
                loss, grads = value_and_grad(loss_fn)(params, x, y, cfg, mesh)
                grads, _ = clip_by_global_norm(grads, cfg.clip)
                params, opt_state = adamw_update(grads, opt_state, params, cfg)
                return params, opt_state, loss
        else:
            raise ValueError(f"Trainer: expected optimizer 'adamw' or 'optax', got "
                             f"{optimizer!r}")
        self.step = jit(step, compiler=compiler, donate_argnums=(0, 1))
        self.evaluate = jit(lambda p, x, y: loss_fn(p, x, y, cfg, mesh), compiler=compiler)

    # placement -------------------------------------------------------------------------
    def put(self, value, spec):
        if self.mesh is None:
            return nx.tensor(value, backend=self.backend) if not isinstance(
                value, nx.Tensor) or value.backend.name != self.backend else value
        return nx.device_put(value, nx.NamedSharding(self.mesh, spec), backend=self.backend)

    def place_params(self, params):
        specs = param_specs(params)
        return tree_map(lambda p, s: self.put(p, s), params, specs)

    def init_state(self, params):
        """The optimizer state for ``params`` (placed as the parameters are)."""
        if self.optimizer == "adamw":
            return adamw_init(params)
        import jax
        state = self._tx.init(tree_map(lambda p: np.asarray(p.to_numpy()), params))
        return jax.tree_util.tree_map(lambda a: self.put(np.asarray(a), P()), state)

    def place_state(self, state, params):
        if self.optimizer == "adamw":
            specs = param_specs(params)
            return {"m": tree_map(self.put, state["m"], specs),
                    "v": tree_map(self.put, state["v"], specs),
                    "t": self.put(state["t"], P())}
        import jax
        return jax.tree_util.tree_map(lambda a: self.put(a, P()), state)

    def place_batch(self, x, y):
        return self.put(x, P("data", None)), self.put(y, P("data", None))

    def start(self):
        """``(params, opt_state)`` at step 0, placed."""
        params = self.place_params(init_params(self.cfg))
        return params, self.place_state(self.init_state(params), params)


def run(cfg, *, mesh=None, compiler="exla", optimizer="adamw", steps=None, start=None,
        every=0, val_batches=0, log=None, trainer=None, local_view=False):
    """Trains from ``start`` (``(params, opt_state, step)``, or None: from the initial
    parameters) to step ``steps`` (default ``cfg.steps``): ``(losses, params, opt_state,
    history)``; ``losses`` the training loss of each step run (floats), ``history`` the
    ``(step, loss, val_loss)`` of each progress line (every ``every`` steps, with
    ``val_batches`` validation batches)."""
    tr = trainer or Trainer(cfg, mesh=mesh, compiler=compiler, optimizer=optimizer,
                            local_view=local_view)
    train, val = corpus()
    if start is None:
        params, state = tr.start()
        first = 0
    else:
        params, state, first = start
    steps = cfg.steps if steps is None else steps
    losses, history, pending = [], [], []
    t_last, n_last = time.perf_counter(), first
    peak = None
    for i in range(first, steps):
        x, y = tr.place_batch(*batch(train, cfg, i))
        if log and i == first:  # the first call traces and compiles the step
            with Progress("compiling the training step"):
                params, state, loss = tr.step(params, state, x, y)
                nx.block_until_ready(loss)
            peak = step_peak(tr, params, state, x, y)
            if every and (i + 1) % every and i + 1 < steps:  # step times without the compile
                t_last, n_last = time.perf_counter(), i + 1
        else:
            params, state, loss = tr.step(params, state, x, y)
        pending.append(loss)
        if every and ((i + 1) % every == 0 or i + 1 == steps):
            losses += [float(v.to_numpy()) for v in pending]
            pending = []
            dt = time.perf_counter() - t_last
            vl = validation_loss(tr, params, val, cfg, val_batches, shown=bool(log))
            history.append((i + 1, losses[-1], vl))
            if log:
                n = i + 1 - n_last
                log(f"step {i + 1:5d}  loss {losses[-1]:.4f}  val {vl:.4f}  "
                    f"{n * cfg.batch * cfg.context / dt:8.0f} tok/s  "
                    f"{1000 * dt / n:7.1f} ms/step{memory_note(peak)}")
            t_last, n_last = time.perf_counter(), i + 1
    losses += [float(v.to_numpy()) for v in pending]
    return losses, params, state, history


def validation_loss(tr, params, val, cfg, n, shown=False):
    """The mean loss of ``n`` validation batches (NaN for none), with a progress bar."""
    if not n:
        return float("nan")
    total = 0.0
    with Progress("validation", n, shown=shown) as bar:
        for k in range(n):
            total += float(tr.evaluate(params, *tr.place_batch(
                *batch(val, cfg, k, seed=cfg.seed + 1))).to_numpy())
            bar.update(k + 1)
    return total / n


class Progress:
    """A one-line progress bar on stderr while a block runs, drawn only on a terminal
    (``shown=False``: never): ``Progress(what, total)`` draws ``bar.update(k)``'s ``k /
    total``; ``Progress(what)`` (no total: a compile, one blocking call) ticks the elapsed
    seconds from a thread until the block ends. The line is erased at the end."""

    def __init__(self, what, total=None, shown=True):
        self.what, self.total, self.done = what, total, 0
        self.shown = shown and sys.stderr.isatty()
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = None

    def _draw(self):
        s = time.perf_counter() - self.t0
        if self.total:
            n = 24 * self.done // self.total
            line = f"{self.what} [{'#' * n}{'.' * (24 - n)}] {self.done}/{self.total} {s:.1f} s"
        else:
            line = f"{self.what} ... {s:.0f} s"
        sys.stderr.write("\r" + line)
        sys.stderr.flush()

    def update(self, done):
        self.done = done
        if self.shown:
            self._draw()

    def _tick(self):
        while not self._stop.wait(1.0):
            self._draw()

    def __enter__(self):
        if self.shown:
            self._draw()
            if self.total is None:
                self._thread = threading.Thread(target=self._tick, daemon=True)
                self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        return False


def step_peak(tr, *args):
    """The training step's peak device memory per device, from XLA's buffer assignment
    (arguments and results, less the donated buffers reused in place, plus temporaries),
    or None where the compiler does not report it (the Evaluator). ``compile`` of the
    jitted step finds the executable the step already compiled."""
    try:
        m = compile(tr.step, *args).memory_stats()
    except NotImplementedError:
        return None
    return m["argument"] + m["output"] - m["alias"] + m["temp"]


def memory_note(peak):
    """The step's device memory (``step_peak``) and the process's peak resident memory
    (on the CPU the devices' memory is the host's)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10   # KiB on Linux
    step = "" if peak is None else f"  step {peak / 2**20:.1f} MiB/device"
    return f"{step}  peak rss {rss:.0f} MiB"


# ----------------------------------------------------------------------------------------
# Checkpoints
# ----------------------------------------------------------------------------------------
def gather(tree):
    """``tree`` with each tensor whose shards live on several processes gathered whole
    (``process_allgather``: every process must call this, as any collective); with one
    process, ``tree`` itself."""
    flat, spec = flatten(tree)
    return unflatten(spec, [x if not isinstance(x, nx.Tensor) or x.is_fully_addressable
                            else distributed.process_allgather(x) for x in flat])


def save(path, params, state, step):
    """Writes the checkpoint from process 0 (every process calls this: it gathers)."""
    ck = gather({"params": params, "opt_state": state})
    if distributed.process_index() == 0:
        nx.save({**ck, "step": nx.tensor(step)}, path)


def load(path, tr):
    """``(params, opt_state, step)`` from ``path``, placed for trainer ``tr``."""
    ck = nx.load(path)
    params = tr.place_params(ck["params"])
    return params, tr.place_state(ck["opt_state"], params), int(ck["step"].to_numpy())


# ----------------------------------------------------------------------------------------
# Sampling with a KV cache
# ----------------------------------------------------------------------------------------
def make_sampler(cfg, length, *, temperature=1.0, top_k=None, compiler="exla"):
    """A compiled ``sample(params, prompt, key) -> s32[B][length]``: ``prompt``
    s32[B][length] whose first ``n`` positions (``n`` = the s32 argument) are given, the
    rest generated one byte at a time with a per-layer key/value cache (a ``scan`` over
    positions; each step runs one position through the layers and ``put_slice``s its
    keys and values into the cache), at ``temperature``, from the ``top_k`` likeliest
    bytes (None: all)."""
    L, D, H = cfg.layers, cfg.width, cfg.heads
    Dh = D // H
    assert length <= cfg.context

    def one_layer(x, layer, i, B):
        p, kc, vc = layer
        h = layer_norm(x, p["ln1_g"], p["ln1_b"])
        q, k, v = (nx.reshape(nx.dot(h, p[w]), (B, 1, H, Dh)) for w in ("wq", "wk", "wv"))
        kc = nx.put_slice(kc, [0, i, 0, 0], k)
        vc = nx.put_slice(vc, [0, i, 0, 0], v)
        lengths = nx.broadcast(nx.as_type(i + 1, "s32"), (B,))
        a = dot_product_attention(q, kc, vc, key_value_seq_lengths=lengths)
        x = x + nx.dot(nx.reshape(a, (B, 1, D)), p["wo"]) + p["bo"]
        h = gelu(nx.dot(layer_norm(x, p["ln2_g"], p["ln2_b"]), p["w1"]) + p["b1"])
        return x + nx.dot(h, p["w2"]) + p["b2"], (kc, vc)

    def sample(params, prompt, n, key):
        B = prompt.shape[0]
        cache = nx.broadcast(nx.tensor(0.0), (L, B, length, H, Dh))

        def position(carry, i):
            tokens, kc, vc = carry
            tok = nx.slice(tokens, [0, i], [B, 1])
            x = nx.take(params["wte"], tok, axis=0) + nx.reshape(
                nx.take(params["wpe"], nx.reshape(i, (1,)), axis=0), (1, 1, D))
            x, (kc, vc) = scan(lambda x, layer: one_layer(x, layer, i, B), x,
                               (params["blocks"], kc, vc))
            x = layer_norm(x, params["lnf_g"], params["lnf_b"])
            logits = nx.reshape(nx.dot(x, [2], params["wte"], [1]), (B, VOCAB))
            logits = logits / temperature
            if top_k is not None:
                kth = nx.slice(nx.top_k(logits, k=top_k)[0], [0, top_k - 1], [B, 1])
                logits = nx.select(logits < kth, -1e30, logits)
            nxt = nx.as_type(nr.categorical_split(nr.fold_in(key, i), logits, axis=-1), "s32")
            keep = nx.slice(tokens, [0, i + 1], [B, 1])
            nxt = nx.select(i + 1 < n, keep, nx.reshape(nxt, (B, 1)))
            return (nx.put_slice(tokens, [0, i + 1], nxt), kc, vc), None

        (tokens, _, _), _ = scan(position, (prompt, cache, cache),
                                 nx.iota((length - 1,), type="s32"))
        return tokens
    return jit(sample, compiler=compiler)


def generate(params, cfg, prompt: bytes, length, *, seed=0, temperature=1.0, top_k=None,
             sampler=None):
    """The text ``prompt`` continued to ``length`` bytes (a ``str``, bytes decoded with
    replacement)."""
    sampler = sampler or make_sampler(cfg, length, temperature=temperature, top_k=top_k)
    buf = np.zeros((1, length), np.int32)
    buf[0, :len(prompt)] = np.frombuffer(prompt, np.uint8)
    params = tree_map(lambda p: nx.tensor(p.to_numpy(), backend="exla"), params)
    out = sampler(params, nx.tensor(buf, backend="exla"),
                  nx.tensor(len(prompt), type="s32", backend="exla"), nr.key(seed))
    return bytes(out.to_numpy()[0].astype(np.uint8)).decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------------------
# The command line
# ----------------------------------------------------------------------------------------
def parse_mesh(text):
    if text in (None, "", "1", "none"):
        return None
    d, m = (int(v) for v in text.lower().split("x"))
    return nx.Mesh("gpt", (d, m), axis_names=("data", "model"))


def plot(history, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'nxpy[plot]', or make gpt)")
        return
    steps, tr, va = zip(*history)
    plt.figure(figsize=(6, 4))
    plt.plot(steps, tr, label="train")
    plt.plot(steps, va, label="validation")
    plt.xlabel("step")
    plt.ylabel("loss (nats/byte)")
    plt.legend()
    plt.title("nxpy GPT on Tiny Shakespeare")
    plt.savefig(path, dpi=100)
    plt.close()
    print(f"wrote {path}")


def main(argv=None):
    d = Config()
    p = argparse.ArgumentParser(prog="examples/gpt.py", description=__doc__.split("\n")[0])
    for name in ("layers", "width", "heads", "context", "batch", "steps", "warmup",
                 "seed"):
        p.add_argument(f"--{name}", type=int, default=getattr(d, name))
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--remat", action="store_true", help="checkpoint each block")
    p.add_argument("--optimizer", choices=["adamw", "optax"], default="adamw")
    p.add_argument("--mesh", default=None, help='"2x2": batch over data, heads over model')
    p.add_argument("--shard-map", action="store_true",
                   help="the loss on the local view (shard_map, psum written out)")
    p.add_argument("--compiler", choices=["exla", "evaluator"], default="exla")
    p.add_argument("--every", type=int, default=25, help="steps between progress lines")
    p.add_argument("--val-batches", type=int, default=4)
    p.add_argument("--checkpoint", default="gpt_checkpoint.nx")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    p.add_argument("--plot", default="gpt_loss.png")
    p.add_argument("--losses", default="",
                   help="write each step's training loss to this file (JSON, full precision)")
    p.add_argument("--sample", type=int, default=120, help="bytes to sample at the end")
    p.add_argument("--prompt", default="ROMEO:")
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--top-k", type=int, default=20)
    a = p.parse_args(argv)
    cfg = replace(d, **{k: getattr(a, k) for k in ("layers", "width", "heads", "context",
                                                    "batch", "steps", "warmup", "seed",
                                                    "lr", "remat")})
    mesh = parse_mesh(a.mesh)
    lead = distributed.process_index() == 0      # across processes: process 0 reports
    say = print if lead else (lambda *_, **__: None)
    tr = Trainer(cfg, mesh=mesh, compiler=a.compiler, optimizer=a.optimizer,
                 local_view=a.shard_map)
    start = load(a.checkpoint, tr) if a.resume and os.path.exists(a.checkpoint) else None
    n_params = sum(int(np.prod(x.shape)) for x in leaves(init_params(cfg)))
    procs = distributed.process_count()
    say(f"GPT: {cfg.layers} layers, width {cfg.width}, {cfg.heads} heads, context "
        f"{cfg.context}, batch {cfg.batch}, {n_params / 1e6:.2f}M parameters; "
        f"optimizer {a.optimizer}; {'mesh ' + a.mesh if mesh else 'one device'}"
        f"{f' over {procs} processes' if procs > 1 else ''}"
        f"{'; remat' if cfg.remat else ''}; from step {start[2] if start else 0} to "
        f"{cfg.steps}", flush=True)
    t0 = time.perf_counter()
    losses, params, state, history = run(cfg, trainer=tr, start=start, every=a.every,
                                         val_batches=a.val_batches,
                                         log=(lambda s: print(s, flush=True)) if lead
                                         else None)
    say(f"trained in {time.perf_counter() - t0:.1f} s (first step's compile included)")
    save(a.checkpoint, params, state, cfg.steps)
    say(f"wrote {a.checkpoint}")
    if lead and a.losses:
        Path(a.losses).write_text(json.dumps(losses))
    if lead and history and a.plot:
        plot(history, a.plot)
    if a.sample:
        params = gather(params)     # a collective: before the lead's own branch
    if lead and a.sample:
        length = min(cfg.context, len(a.prompt.encode()) + a.sample)
        text = generate(params, cfg, a.prompt.encode(), length, seed=cfg.seed,
                        temperature=a.temperature, top_k=a.top_k)
        print("sample:\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
