"""Programs from Flax (linen and NNX), Optax and jax.random, lowered live by the installed
jax (``jax.jit(f).lower(*args).as_text()``), loaded by :mod:`nxpy.stablehlo` and run on the
Evaluator and EXLA against JAX's own results (issue 29): inits with raw ``uint32[2]`` and
typed ``jax.random.key`` keys, forward passes (MLP, CNN with pooling, a ResNet block with
BatchNorm in train mode, a Transformer block with attention, LayerNorm and dropout, an
LSTM scanned by ``nn.RNN``, a bf16 MLP), NNX modules split and merged inside ``jax.jit``,
Optax train steps and a data-parallel train step over a 2-device mesh.

Each case is lowered once per test process (one test per case runs both compilers, so the
JAX side is traced once). The fast slice runs the cases that exercise distinct importer features
(key kinds, convolutions and pooling, BatchNorm's mutable state, attention with dropout, a
scanned LSTM, bf16, jax.random's samplers, NNX, an Optax step, sharding); the cases marked
``soak`` repeat features of those and run under `make soak`.
Typed keys cross as their ``key_data`` (the module's arguments and results are
``ui32[2]``); every result leaf is compared.

Tolerances: integers (keys, counts, dropout masks' source bits) exactly. Floats relative
to each leaf's largest entry, 1e-5 in f32: EXLA compiles the imported graph with the same
XLA as JAX but from nxpy's own lowering (fusions, and so the rounding of reductions, may
differ), and the Evaluator's NumPy kernels round ``exp``/``tanh``/matmul sums their own
way; the train steps' gradients and BatchNorm's variance (a difference of means) add a few
more roundings, hence 2e-5 there. bf16: 2 ulps (1e-2) of the largest entry."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn.sharding import specs as SH
from nxpy.stablehlo import load
from nxpy.stablehlo.sharding import is_sharded

from helpers import COMPILERS

import jax  # after nxpy started XLA (conftest), so both share the host devices
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import flax.linen as nn
import optax
from flax import nnx


def _x(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _is_key(leaf) -> bool:
    return hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def _leaves(tree) -> list:
    """The pytree's array leaves as NumPy arrays, typed keys as their key data."""
    return [np.asarray(jax.random.key_data(x) if _is_key(x) else x)
            for x in jax.tree_util.tree_leaves(tree)]


# ----------------------------------------------------------------------------------------
# The models
# ----------------------------------------------------------------------------------------
class MLP(nn.Module):
    features: tuple = (16, 4)
    dtype: object = jnp.float32

    @nn.compact
    def __call__(self, x):
        for i, f in enumerate(self.features):
            x = nn.Dense(f, dtype=self.dtype, param_dtype=self.dtype)(x)
            if i + 1 < len(self.features):
                x = nn.relu(x)
        return x


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(8, (3, 3))(x))
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(8, (3, 3), padding="VALID")(x))
        x = nn.max_pool(x, (2, 2), strides=(1, 1))
        return nn.Dense(10)(x.reshape(x.shape[0], -1))


class ResBlock(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool):
        norm = functools.partial(nn.BatchNorm, use_running_average=not train, momentum=0.9)
        y = nn.relu(norm()(nn.Conv(4, (3, 3), use_bias=False)(x)))
        y = norm()(nn.Conv(4, (3, 3), use_bias=False)(y))
        return nn.relu(x + y)


class TransformerBlock(nn.Module):
    @nn.compact
    def __call__(self, x, deterministic: bool):
        y = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=16, dropout_rate=0.1)(
            nn.LayerNorm()(x), deterministic=deterministic)
        x = x + nn.Dropout(0.1)(y, deterministic=deterministic)
        y = nn.Dense(x.shape[-1])(nn.gelu(nn.Dense(32)(nn.LayerNorm()(x))))
        return x + nn.Dropout(0.1)(y, deterministic=deterministic)


class LSTM(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(3)(nn.RNN(nn.LSTMCell(8))(x))


class NNXNet(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.dense1 = nnx.Linear(6, 16, rngs=rngs)
        self.norm = nnx.BatchNorm(16, rngs=rngs)
        self.drop = nnx.Dropout(0.2, rngs=rngs)
        self.dense2 = nnx.Linear(16, 4, rngs=rngs)

    def __call__(self, x):
        return self.dense2(self.drop(self.norm(nnx.relu(self.dense1(x)))))


# ----------------------------------------------------------------------------------------
# The cases: name -> builder() returning (jitted function, arguments)
# ----------------------------------------------------------------------------------------
RAW = jax.random.PRNGKey(0)          # uint32[2]


def _typed(seed=0):
    return jax.random.key(seed)       # key<fry>[]


def _init(model, shape, *extra, dtype=np.float32, **kw):
    """``model.init`` of a dummy input of ``shape`` (closed over: the module's one
    argument is the key)."""
    return lambda key: model.init(key, jnp.zeros(shape, dtype), *extra, **kw)


def _mse(model):
    def loss(params, x, y):
        return jnp.mean((model.apply(params, x) - y) ** 2)
    return loss


def _optax_step(model, tx):
    loss = _mse(model)

    def step(params, opt_state, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return value, optax.apply_updates(params, updates), opt_state
    return step


def _mlp_params():
    return init_vars(MLP(), (8, 6))


CASES = {}
SOAK = set()  # the cases left to `make soak`


def case(name, tol=1e-5, xfail=None, soak=False):
    """Register a case; ``soak``: a program whose importer features (ops, key kinds,
    regions) another case already exercises, run by `make soak` only."""
    def register(build):
        CASES[name] = (build, tol, xfail)
        if soak:
            SOAK.add(name)
        return build
    return register


@case("linen_mlp_init_raw_key")
def _():
    return _init(MLP(), (8, 6)), (RAW,)


@case("linen_mlp_init_typed_key")
def _():
    return _init(MLP(), (8, 6)), (_typed(1),)


# soak: as the CNN's and the train steps' dense layers
@case("linen_mlp_forward", soak=True)
def _():
    return MLP().apply, (_mlp_params(), _x(8, 6, seed=1))


@case("linen_cnn_forward")
def _():
    return CNN().apply, (init_vars(CNN(), (2, 8, 8, 3)), _x(2, 8, 8, 3, seed=3))


# soak: as linen_mlp_init_typed_key's typed-key init
@case("linen_resnet_block_init_typed_key", soak=True)
def _():
    return _init(ResBlock(), (2, 6, 6, 4), True), (_typed(2),)


@case("linen_resnet_block_batchnorm_train", tol=2e-5)
def _():
    def train(variables, x):
        return ResBlock().apply(variables, x, True, mutable=["batch_stats"])
    return train, (init_vars(ResBlock(), (2, 6, 6, 4), True), _x(2, 6, 6, 4, seed=4))


# soak: as linen_mlp_init_typed_key's typed-key init
@case("linen_transformer_block_init_typed_key", soak=True)
def _():
    return _init(TransformerBlock(), (2, 5, 8), True), (_typed(3),)


@case("linen_transformer_block_dropout_forward")
def _():
    def forward(variables, x, key):
        return TransformerBlock().apply(variables, x, False, rngs={"dropout": key})
    return forward, (init_vars(TransformerBlock(), (2, 5, 8), True), _x(2, 5, 8, seed=5),
                     _typed(4))


# soak: as linen_mlp_init_raw_key's raw-key init
@case("linen_lstm_rnn_init_raw_key", soak=True)
def _():
    return _init(LSTM(), (2, 5, 4)), (RAW,)


@case("linen_lstm_rnn_forward")
def _():
    return LSTM().apply, (init_vars(LSTM(), (2, 5, 4)), _x(2, 5, 4, seed=6))


# soak: as the typed-key init and the bf16 forward
@case("linen_bf16_mlp_init_typed_key", tol=1e-2, soak=True)
def _():
    return _init(MLP(dtype=jnp.bfloat16), (8, 6), dtype=jnp.bfloat16), (_typed(5),)


@case("linen_bf16_mlp_forward", tol=1e-2)
def _():
    model = MLP(dtype=jnp.bfloat16)
    return model.apply, (init_vars(model, (8, 6)), _x(8, 6, seed=7).astype(jnp.bfloat16))


@case("random_typed_key")
def _():
    def sample(key):
        k1, k2, k3 = jax.random.split(key, 3)
        return {"split": jax.random.split(jax.random.fold_in(k1, 7), 2),
                "uniform": jax.random.uniform(k1, (4, 3)),
                "normal": jax.random.normal(k2, (5,)),
                "bernoulli": jax.random.bernoulli(k3, 0.3, (6,)),
                "categorical": jax.random.categorical(k2, jnp.arange(4.0), shape=(5,)),
                "permutation": jax.random.permutation(k3, 8),
                "randint": jax.random.randint(k1, (4,), -5, 9),
                "truncated_normal": jax.random.truncated_normal(k2, -1.5, 2.0, (6,))}
    return sample, (_typed(6),)


@case("random_raw_key_gamma")
def _():
    return (lambda key: jax.random.gamma(key, jnp.array([0.5, 1.0, 3.0]), (2, 3))), (RAW,)


# soak: as the linen inits' key splitting
@case("nnx_init_rngs", soak=True)
def _():
    return (lambda key: nnx.state(NNXNet(nnx.Rngs(key)))), (_typed(7),)


def _nnx_split():
    return nnx.split(NNXNet(nnx.Rngs(params=0, dropout=1)))


# soak: as nnx_train_step's forward in train mode
@case("nnx_forward_train_mode", soak=True)
def _():
    graphdef, state = _nnx_split()

    def forward(state, x):
        model = nnx.merge(graphdef, state)
        y = model(x)
        return y, nnx.state(model)       # the dropout stream's count and BatchNorm's stats
    return forward, (state, _x(8, 6, seed=8))


@case("nnx_train_step", tol=2e-5)
def _():
    graphdef, state = _nnx_split()

    def step(state, x, y):
        model = nnx.merge(graphdef, state)

        def loss(model):
            return jnp.mean((model(x) - y) ** 2)
        value, grads = nnx.value_and_grad(loss)(model)
        params = nnx.state(model, nnx.Param)
        nnx.update(model, jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads))
        return value, nnx.state(model)
    return step, (state, _x(8, 6, seed=9), _x(8, 4, seed=10))


@case("optax_adamw_train_step", tol=2e-5)
def _():
    tx = optax.adamw(1e-2, weight_decay=1e-2)
    params = _mlp_params()
    state = tx.init(params)
    step = _optax_step(MLP(), tx)
    # one step taken in JAX first, so that the moments are not zero
    _, params, state = jax.jit(step)(params, state, _x(8, 6, seed=11), _x(8, 4, seed=12))
    return step, (params, state, _x(8, 6, seed=13), _x(8, 4, seed=14))


# soak: as optax_adamw_train_step's update structure
@case("optax_sgd_momentum_train_step", tol=2e-5, soak=True)
def _():
    tx = optax.sgd(0.05, momentum=0.9, nesterov=True)
    params = _mlp_params()
    state = tx.init(params)
    step = _optax_step(MLP(), tx)
    _, params, state = jax.jit(step)(params, state, _x(8, 6, seed=15), _x(8, 4, seed=16))
    return step, (params, state, _x(8, 6, seed=17), _x(8, 4, seed=18))


# ----------------------------------------------------------------------------------------
# Lowering and running
# ----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def lowered(name):
    """``(module text, argument leaves, JAX's result leaves)`` of a case."""
    build, _, _ = CASES[name]
    fn, args = build()
    low = jax.jit(fn).lower(*args)
    return low.as_text(), _leaves(args), _leaves(low.compile()(*args))


@functools.lru_cache(maxsize=None)
def init_vars(model, shape, *extra):
    """Random variables of the structure ``model.init`` gives for an input of ``shape``
    (from ``jax.eval_shape``: nothing compiled), BatchNorm's running variances positive:
    what the forward cases start from."""
    shapes = jax.eval_shape(lambda: model.init(RAW, jnp.zeros(shape), *extra))
    rng = np.random.default_rng(len(shape))

    def leaf(path, s):
        x = rng.standard_normal(s.shape) * 0.5
        if "var" in jax.tree_util.keystr(path):
            x = np.abs(x) + 0.5
        return jnp.asarray(x, s.dtype)
    return jax.tree_util.tree_map_with_path(leaf, shapes)


def check(got, want, tol, what):
    assert len(got) == len(want), f"{what}: {len(got)} results, JAX gives {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        g = g.to_numpy() if hasattr(g, "to_numpy") else np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, \
            f"{what}: result {i} is {g.dtype}{g.shape}, JAX's {w.dtype}{w.shape}"
        if not np.issubdtype(w.dtype, np.inexact):
            np.testing.assert_array_equal(g, w, err_msg=f"{what}: result {i}")
            continue
        g, w = g.astype(np.float64), w.astype(np.float64)
        scale = max(float(np.max(np.abs(w), initial=0.0)), 1e-30)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale,
                                   err_msg=f"{what}: result {i}")


def _params(name):
    build, _, xfail = CASES[name]
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    marks += [pytest.mark.soak] if name in SOAK else []
    return pytest.param(name, marks=marks)


@pytest.mark.parametrize("name", [_params(n) for n in CASES])
def test_program_loads_and_matches_jax(name):
    text, args, want = lowered(name)
    program = load(text)                 # traces the module on its templates: fails here
    assert not is_sharded(program)
    assert len(program.templates) == len(args), "an argument leaf was pruned by jax.jit"
    for compiler in COMPILERS:
        got = program.jit(compiler)(*[nx.tensor(a) for a in args])
        got = list(got) if isinstance(got, tuple) else [got]
        check(got, want, CASES[name][1], f"{name} (jax {jax.__version__}) on {compiler}")


def test_the_set_covers_the_issue():
    """Inits with both key kinds, forward passes, train steps of each library."""
    names = set(CASES)
    assert {n for n in names if "init" in n and "raw_key" in n}
    assert {n for n in names if "init" in n and "typed_key" in n}
    for part in ("cnn", "resnet_block_batchnorm", "transformer_block_dropout", "lstm_rnn",
                 "bf16", "nnx_train_step", "optax_adamw", "optax_sgd_momentum"):
        assert any(part in n for n in names), part


# ----------------------------------------------------------------------------------------
# A data-parallel train step over a 2-device mesh
# ----------------------------------------------------------------------------------------
def _sharded_step():
    devices = np.array(jax.devices()[:2])
    mesh = Mesh(devices, ("data",))
    tx = optax.adamw(1e-2)
    params = _mlp_params()
    opt_state = tx.init(params)
    step = _optax_step(MLP(), tx)
    replicated, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    jf = jax.jit(step, in_shardings=(replicated, replicated, batch, batch),
                 out_shardings=(replicated, replicated, replicated))
    x, y = _x(8, 6, seed=19), _x(8, 4, seed=20)
    args = (params, opt_state, x, y)
    placed = jax.device_put(args, (replicated, replicated, batch, batch))
    text = jf.lower(*placed).as_text()
    arg_leaves = _leaves(args)
    specs = [{}] * (len(arg_leaves) - 2) + [{0: ["data"]}] * 2
    return text, arg_leaves, specs, _leaves(jf(*placed))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_data_parallel_optax_step_on_a_2_device_mesh(compiler):
    text, args, specs, want = _cached_sharded()
    program = load(text)
    assert is_sharded(program)
    mesh = program.mesh()
    assert mesh.size == 2
    shards = [SH.shard(nx.tensor(a), mesh, s) for a, s in zip(args, specs)]
    per_device = program.shard_jit(compiler)([list(x) for x in zip(*shards)])
    for device, outs in enumerate(per_device):   # every result is replicated
        check(list(outs), want, 2e-5, f"sharded adamw step (jax {jax.__version__}) on "
                                      f"{compiler}, device {device}")


@functools.lru_cache(maxsize=None)
def _cached_sharded():
    return _sharded_step()
