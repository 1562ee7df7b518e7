"""examples/gpt.py's GPT in ``jax.numpy``: the same model, the same AdamW (or optax's), the
same schedule and clipping, the same layout on a ("data", "model") mesh. It takes its
initial parameters and its batches as NumPy arrays (examples/gpt.py draws them), so the
two runs are step for step the same computation; tests/test_gpt.py compares their losses
and bench/gpt.py their speed.

    make_step(cfg, mesh=None, optimizer="adamw")  -> (jitted step, init_state)
    train(cfg, params, batches, mesh=None)        -> list of losses (floats)

Import nxpy (and start its XLA client, ``nxpy.pjrt.devices()``) before this module, so
that JAX shares nxpy's host devices.
"""
from __future__ import annotations

import functools
import math

import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

DECAYED = ("wte", "wpe", "wq", "wk", "wv", "wo", "w1", "w2")


def tree_map_named(f, tree, *rest):
    return {k: (tree_map_named(f, v, *(r[k] for r in rest)) if isinstance(v, dict)
                else f(k, v, *(r[k] for r in rest))) for k, v in tree.items()}


def param_specs(params):
    cols, rows = P(None, None, "model"), P(None, "model", None)
    by_name = {"wq": cols, "wk": cols, "wv": cols, "wo": rows, "w1": cols,
               "b1": P(None, "model"), "w2": rows}
    return tree_map_named(lambda name, p: by_name.get(name, P()), params)


def layer_norm(x, g, b, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + eps) * g + b


def block(x, p, cfg, mesh=None):
    B, T, D = x.shape
    H = cfg.heads

    def c(x, spec):
        return x if mesh is None else jax.lax.with_sharding_constraint(
            x, NamedSharding(mesh, spec))
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])

    def heads(w):
        return c((h @ w).reshape(B, T, H, D // H), P("data", None, "model", None))
    a = jax.nn.dot_product_attention(heads(p["wq"]), heads(p["wk"]), heads(p["wv"]),
                                     is_causal=True)
    x = c(x + a.reshape(B, T, D) @ p["wo"] + p["bo"], P("data", None, None))
    h = layer_norm(x, p["ln2_g"], p["ln2_b"])
    h = c(jax.nn.gelu(h @ p["w1"] + p["b1"]), P("data", None, "model"))
    return c(x + h @ p["w2"] + p["b2"], P("data", None, None))


def loss_fn(params, x, y, cfg, mesh=None):
    T = x.shape[1]
    h = params["wte"][x] + params["wpe"][:T]
    if mesh is not None:
        h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P("data", None, None)))
    f = jax.checkpoint(block, static_argnums=(2, 3)) if cfg.remat else block
    h, _ = jax.lax.scan(lambda h, p: (f(h, p, cfg, mesh), None), h, params["blocks"])
    h = layer_norm(h, params["lnf_g"], params["lnf_b"])
    logp = jax.nn.log_softmax(h @ params["wte"].T, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, y[..., None], axis=2))


def schedule(t, cfg):
    t = t.astype(jnp.float32)
    warm = cfg.lr * jnp.minimum(t, float(cfg.warmup)) / max(cfg.warmup, 1)
    decay = max(cfg.steps - cfg.warmup, 1)
    frac = jnp.clip(t - cfg.warmup, 0.0, float(decay)) / decay
    alpha = cfg.min_lr / cfg.lr
    cos = cfg.lr * ((1 - alpha) * 0.5 * (1 + jnp.cos(math.pi * frac)) + alpha)
    return jnp.where(t < cfg.warmup, warm, cos)


def adamw_init(params):
    def zeros():
        return jax.tree_util.tree_map(jnp.zeros_like, params)
    return {"m": zeros(), "v": zeros(), "t": jnp.zeros((), jnp.int32)}


def adamw_step(grads, state, params, cfg):
    leaves = jax.tree_util.tree_leaves(grads)
    norm = jnp.sqrt(sum(jnp.sum(g * g) for g in leaves))
    grads = jax.tree_util.tree_map(
        lambda g: jnp.where(norm < cfg.clip, g, g / norm * cfg.clip), grads)
    t = state["t"] + 1
    lr = schedule(state["t"], cfg)
    tf = t.astype(jnp.float32)
    c1, c2 = 1 - cfg.beta1 ** tf, 1 - cfg.beta2 ** tf
    m = jax.tree_util.tree_map(lambda m, g: cfg.beta1 * m + (1 - cfg.beta1) * g,
                               state["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: cfg.beta2 * v + (1 - cfg.beta2) * g * g,
                               state["v"], grads)

    def update(name, p, m, v):
        u = (m / c1) / (jnp.sqrt(v / c2) + cfg.eps)
        if name in DECAYED:
            u = u + cfg.weight_decay * p
        return p - lr * u
    return tree_map_named(update, params, m, v), {"m": m, "v": v, "t": t}


def optax_optimizer(cfg):
    import optax
    sched = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, cfg.warmup,
                                               max(cfg.steps, cfg.warmup + 1),
                                               cfg.min_lr)
    mask = functools.partial(tree_map_named, lambda name, _: name in DECAYED)
    return optax.chain(optax.clip_by_global_norm(cfg.clip),
                       optax.adamw(sched, cfg.beta1, cfg.beta2, cfg.eps,
                                   weight_decay=cfg.weight_decay, mask=mask))


def jax_mesh(mesh):
    """The JAX mesh over the same devices as the nxpy ``mesh``."""
    from nxpy import pjrt
    devices = pjrt.devices()
    return Mesh(np.array([devices[i] for i in mesh.devices]).reshape(mesh.shape),
                ("data", "model"))


def make_step(cfg, mesh=None, optimizer="adamw"):
    """``(step, init_state)``: the jitted ``step(params, state, x, y) -> (params, state,
    loss)`` (parameters and state donated) and the optimizer's initial state."""
    if optimizer == "optax":
        import optax
        tx = optax_optimizer(cfg)

        def update(grads, state, params):
            updates, state = tx.update(grads, state, params)
            return optax.apply_updates(params, updates), state
        init = tx.init
    else:
        def update(grads, state, params):
            return adamw_step(grads, state, params, cfg)
        init = adamw_init

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(params, state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y, cfg, mesh)
        params, state = update(grads, state, params)
        return params, state, loss
    return step, init


def place(cfg, params, mesh=None, optimizer="adamw"):
    """``(step, params, state, put_batch)``: NumPy ``params`` on the devices (laid out by
    :func:`param_specs` over ``mesh``, a JAX mesh, or on device 0)."""
    step, init = make_step(cfg, mesh, optimizer)
    if mesh is None:
        dev = jax.devices()[0]
        params = jax.device_put(params, dev)
        return step, params, init(params), lambda a: jax.device_put(a, dev)
    specs = param_specs(params)
    params = jax.tree_util.tree_map(lambda a, s: jax.device_put(a, NamedSharding(mesh, s)),
                                    params, specs)
    state = init(params)
    if optimizer == "adamw":   # the moments laid out as the parameters
        state = {"m": params_like(state["m"], specs, mesh),
                 "v": params_like(state["v"], specs, mesh), "t": state["t"]}
    return step, params, state, lambda a: jax.device_put(a, NamedSharding(mesh, P("data")))


def params_like(tree, specs, mesh):
    return jax.tree_util.tree_map(lambda a, s: jax.device_put(a, NamedSharding(mesh, s)),
                                  tree, specs)


def train(cfg, params, batches, mesh=None, optimizer="adamw"):
    """The loss of each step over ``batches`` (a list of NumPy ``(x, y)``), from the NumPy
    ``params``; ``mesh``: an nxpy mesh (None: one device)."""
    jmesh = None if mesh is None else jax_mesh(mesh)
    step, params, state, put = place(cfg, params, jmesh, optimizer)
    losses = []
    for x, y in batches:
        params, state, loss = step(params, state, put(x), put(y))
        losses.append(loss)
    return [float(v) for v in losses]
