"""Examples from JAX's training cookbook (docs/the-training-cookbook.py, the program that
docs/the-training-cookbook.rst walks through): a transformer trained with explicit sharding
(an 8-way "fsdp" mesh), Adam on mutable refs, and a data loader.

Copyright 2025 The JAX Authors, Apache-2.0; read at the commit below. Each constant is a
``# tag:`` section of the file, verbatim (without its ``# tag:`` marker comments); the
imports and the ode are the file's. The file defines functions and runs them only in its
``train_loop``: each example adds a line or two that call them (``DRIVE``, marked as not
the cookbook's), on a smaller Config than the file's (the config's own keyword fields)."""
from jax_tutorials import example

SOURCE = "jax-ml/jax cec06d116c05f0d52adfceee3d3b730fdbcb0ce5 docs/the-training-cookbook.py"

IMPORTS = r'''
import functools as ft
import itertools as it
import time
from dataclasses import dataclass
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType
'''

ODE = r'''
ode = """
We are the music makers
    And we are the dreamers of dreams
Wandering by lone sea-breakers
    And sitting by desolate streams;
World-losers and world-forsakers
    On whom the pale moon gleams
Yet we are the movers and shaker
    Of the world for ever, it seems
"""
'''

#: the dot_dict container
DOT_DICT = r'''
@jax.tree_util.register_pytree_with_keys_class
class dot_dict(dict):
  __setattr__ = dict.__setitem__
  __getattr__ = dict.__getitem__

  def tree_flatten_with_keys(self):
    keys = tuple(sorted(self))
    return tuple((jax.tree_util.DictKey(k), self[k]) for k in keys), keys

  @classmethod
  def tree_unflatten(cls, keys, values):
    return cls(zip(keys, values))
'''

#: # tag: config
CONFIG = r'''
@jax.tree_util.register_static
@dataclass(kw_only=True, frozen=True)
class Config:
  mesh_axis_names: tuple[str, ...] = ("fsdp",)
  mesh_shape: tuple[int, ...] = (8,)
  seq_length: int = 128

  num_train_steps: int = 10**6
  host_batch_size: int = 16
  learning_rate: float = 1e-4
  beta_1: float = 0.9
  beta_2: float = 0.999
  eps: float = 1e-8
  eps_root: float = 0.0

  param_seed: int = 12738
  num_layers: int = 4
  embed_dim: int = 512
  mlp_dim: int = 512 * 4
  vocab_size: int = 2**8  # uint8 ascii encoding
  num_heads: int = 8
  head_dim: int = 128
  dtype: str = "bfloat16"

  embed: jax.P = jax.P(None, None)
  pos_embed: jax.P = jax.P(None, None)
  att_qkv: jax.P = jax.P(None, "fsdp", None, None)
  att_out: jax.P = jax.P("fsdp", None, None)
  mlp_in: jax.P = jax.P("fsdp", None)
  mlp_out: jax.P = jax.P(None, "fsdp")
  in_kernel: jax.P = jax.P(None, None)
  in_bias: jax.P = jax.P(None)
  out_kernel: jax.P = jax.P("fsdp", None)
  out_bias: jax.P = jax.P(None)

  act_ids: jax.P = jax.P("fsdp")
  act_seq: jax.P = jax.P("fsdp", None, None)
  act_att: jax.P = jax.P("fsdp", None, None, None)
  act_hidden: jax.P = jax.P("fsdp", None, None)

  def __post_init__(self):
    mesh = jax.make_mesh(self.mesh_shape, self.mesh_axis_names, ''' \
    r'''len(self.mesh_shape) * (AxisType.Explicit,))
    jax.sharding.set_mesh(mesh)
'''

#: # tag: get-param-state
GET_PARAM_STATE = r'''
def init_param_state(config: Config) -> dot_dict:
  root_key = jax.random.key(config.param_seed)
  key = map(ft.partial(jax.random.fold_in, root_key), it.count())
  zero_init = jax.nn.initializers.constant(0.0)
  he_init = jax.nn.initializers.he_normal(1, 1)
  dtype = config.dtype

  params = dot_dict(
    pos_embed=zero_init(next(key), (config.seq_length, config.embed_dim), dtype, config.pos_embed),
    layers=dot_dict(),
  )
  params.embedding = he_init(next(key), (config.vocab_size, config.embed_dim), dtype, config.embed)
  params.linear_in = dot_dict(
    kernel=he_init(next(key), (1, config.embed_dim), dtype, config.in_kernel),
    bias=zero_init(next(key), (config.embed_dim,), dtype, config.in_bias),
  )
  params.linear_out = dot_dict(
    kernel=he_init(next(key), (config.embed_dim, config.vocab_size), dtype, config.out_kernel),
  )
  for layer in range(config.num_layers):
    qkv_shape = (3, config.embed_dim, config.num_heads, config.head_dim)
    out_shape = (config.num_heads, config.head_dim, config.embed_dim)
    params.layers[layer] = dot_dict(
      attention=dot_dict(
        qkv=he_init(next(key), qkv_shape, dtype, config.att_qkv),
        out=he_init(next(key), out_shape, dtype, config.att_out),
      ),
      mlp=dot_dict(
        in_kernel=he_init(next(key), (config.embed_dim, config.mlp_dim), dtype, config.mlp_in),
        out_kernel=he_init(next(key), (config.mlp_dim, config.embed_dim), dtype, config.mlp_out),
      ),
    )
  return params
'''

#: # tag: model-apply
MODEL_APPLY = r'''
def model_apply(config: Config, params: dot_dict, tokens: jax.Array) -> jax.Array:
  out = params.embedding.at[tokens].get(out_sharding=config.act_seq)
  out += params.pos_embed
  del tokens

  for layer in range(config.num_layers):
    block = params.layers[layer]
    att_skip = out  # 1 billion dollars in venture capital funding please
    qkv = jnp.einsum("bsd,3dkh->bs3kh", out, block.attention.qkv, out_sharding=config.act_att)
    out = jax.nn.dot_product_attention(qkv[:, :, 0, :], qkv[:, :, 1, :], qkv[:, :, 2, :], ''' \
    r'''is_causal=True)
    out = jnp.einsum("bskh,khd->bsd", out, block.attention.out, out_sharding=config.act_seq)
    out += att_skip
    out *= jax.lax.rsqrt(jnp.linalg.norm(out, axis=-1, keepdims=True) + 1e-6)

    mlp_skip = out  # machine learning circa 1986
    out = jnp.einsum("bsd,dh->bsh", out, block.mlp.in_kernel, out_sharding=config.act_hidden)
    out = jax.nn.gelu(out)
    out = jnp.einsum("bsh,hd->bsd", out, block.mlp.out_kernel, out_sharding=config.act_seq)
    out += mlp_skip
    out *= jax.lax.rsqrt(jnp.linalg.norm(out, axis=-1, keepdims=True) + 1e-6)

  logits = jnp.einsum("bsd,dl->bsl", out, params.linear_out.kernel, out_sharding=config.act_seq)
  return logits
'''

#: # tag: get-adam-state
GET_ADAM_STATE = r'''
def init_adam_state(param: jax.Array) -> dot_dict:
  adam_state = dot_dict(mu=jnp.zeros_like(param), nu=jnp.zeros_like(param), count=jnp.array(0))
  return adam_state
'''

#: # tag: adam-apply
ADAM_APPLY = r'''
def adam_update(config: Config, param: jax.Ref, grad: jax.Array, adam_state: dot_dict):
  adam_state.mu[...] = (1 - config.beta_1) * adam_state.mu[...] + config.beta_1 * grad
  adam_state.nu[...] = (1 - config.beta_2) * adam_state.nu[...] + config.beta_2 * grad**2
  adam_state.count[...] += 1

  mu_hat = adam_state.mu[...] / (1 - config.beta_1 ** adam_state.count[...])
  nu_hat = adam_state.nu[...] / (1 - config.beta_2 ** adam_state.count[...])
  param[...] -= config.learning_rate * mu_hat / (jnp.sqrt(nu_hat + config.eps_root) + config.eps)
'''

#: # tag: get-train-state
GET_TRAIN_STATE = r'''
@jax.jit
def init_train_state(config: Config) -> dot_dict:
  train_state = dot_dict()
  train_state.params = init_param_state(config)
  train_state.opt = jax.tree.map(init_adam_state, train_state.params)
  return train_state
'''

#: # tag: train-step
TRAIN_STEP = r'''
@jax.jit
def train_step(config: Config, train_state: dot_dict, batch: dict) -> dict:
  def loss_fn(params):
    logits = model_apply(config, params, batch["observed_ids"])
    labels = jax.nn.one_hot(batch["target_ids"], config.vocab_size)
    return -(labels * jax.nn.log_softmax(logits)).mean()

  params = jax.tree.map(jax.ref.get, train_state.params)
  loss, grad = jax.value_and_grad(loss_fn)(params)
  jax.tree.map(ft.partial(adam_update, config), train_state.params, grad, train_state.opt)
  metrics = {"train_loss": loss}
  return metrics
'''

#: # tag: record-writer
RECORD_WRITER = r'''
class RecordWriter:
  prev_metrics = None

  def __call__(self, cur_metrics: dict):
    self.prev_metrics, log_metrics = cur_metrics, self.prev_metrics
    if log_metrics is None:
      return
    print(*it.starmap("{}: {}".format, log_metrics.items()), sep="\t")
'''

#: # tag: get-dataset
GET_DATASET = r'''
def get_dataset(config: Config, single_batch=ode) -> Iterator[dict[str, np.ndarray]]:
  while True:
    observed_array = np.frombuffer(single_batch.encode("ascii"), dtype=np.uint8)
    target_array = np.roll(observed_array, -1)
    time.sleep(0.5)
    yield {  # repeat the sequence across the batch size to simulate multiple data points
      "observed_ids": np.tile(observed_array[: config.seq_length], (config.host_batch_size, 1)),
      "target_ids": np.tile(target_array[: config.seq_length], (config.host_batch_size, 1)),
    }
'''

#: # tag: get-dataset-on-device
GET_DATASET_ON_DEVICE = r'''
def get_dataset_on_device(config: Config) -> Iterator[dict[str, jax.Array]]:
  datset = get_dataset(config)
  sharding = jax.P(config.mesh_axis_names)
  return map(ft.partial(jax.make_array_from_process_local_data, sharding), datset)
'''

#: # tag: train-loop
TRAIN_LOOP = r'''
def train_loop(config: Config):
  record_writer = RecordWriter()
  train_state = init_train_state(config)
  train_state = jax.tree.map(jax.ref.new_ref, train_state)
  batch = iter(get_dataset_on_device(config))
  for step in range(config.num_train_steps):
    metrics = train_step(config, train_state, next(batch))
    record_writer({"step": step} | metrics)
'''

#: the calls (not the cookbook's): a small model, its sharding constraints still divisible
SMALL = ("\n# not the cookbook's: a smaller model than its Config's defaults\n"
         "config = Config(num_layers=1, embed_dim=64, mlp_dim=256, num_heads=8, head_dim=8,\n"
         "                seq_length=16, host_batch_size=8, dtype='float32')\n")
TOKENS = ("tokens = np.tile(np.frombuffer(ode.encode('ascii'), dtype=np.uint8)[:16], (8, 1))"
          "  # not the cookbook's\n")
BASE = IMPORTS + ODE + CONFIG + DOT_DICT
#: the file's imports but AxisType (issue 45 item 4), for the examples that do not use it
PLAIN = IMPORTS.replace("from jax.sharding import AxisType\n", "")
REF = "not in issue 45: jax.ref (mutable arrays: jax.Ref, new_ref, get, x[...] updates)"
TREE = ("not in issue 45: classes registered with jax.tree_util (the cookbook's "
        "register_static Config, its dot_dict) are not nxpy containers")

EXAMPLES = [
    example("training_cookbook:config", "# tag: config", BASE + SMALL),
    example("training_cookbook:dot_dict", "the dot_dict container", PLAIN + DOT_DICT +
            "out = jax.jit(lambda d: d.a * 2)(dot_dict(a=jnp.ones(2)))  # not the cookbook's\n",
            values=("out",), xfail="not in issue 45: a class registered with jax.tree_util "
            "(register_pytree_with_keys_class, a dict subclass) enters jit as a plain dict"),
    example("training_cookbook:init_param_state", "# tag: get-param-state",
            BASE + GET_PARAM_STATE + SMALL + "params = init_param_state(config)"
            "  # not the cookbook's\n", values=("params",), shardings=("params",)),
    example("training_cookbook:model_apply", "# tag: model-apply",
            BASE + GET_PARAM_STATE + MODEL_APPLY + SMALL + TOKENS +
            "logits = jax.jit(model_apply)(config, init_param_state(config), tokens)"
            "  # not the cookbook's\n", values=("logits",), shardings=("logits",),
            rtol=1e-4, atol=1e-4, xfail=TREE),
    example("training_cookbook:init_adam_state", "# tag: get-adam-state",
            PLAIN + DOT_DICT + GET_ADAM_STATE +
            "state = init_adam_state(jnp.ones(3))  # not the cookbook's\n", values=("state",)),
    example("training_cookbook:adam_update", "# tag: adam-apply",
            BASE + GET_ADAM_STATE + ADAM_APPLY + SMALL +
            "param, state = jax.ref.new_ref(jnp.ones(3)), jax.tree.map(jax.ref.new_ref, "
            "init_adam_state(jnp.ones(3)))\nadam_update(config, param, jnp.full(3, 0.5), state)"
            "  # not the cookbook's\nparam = param[...]\n", values=("param",),
            xfail=REF),
    example("training_cookbook:init_train_state", "# tag: get-train-state",
            BASE + GET_PARAM_STATE + GET_ADAM_STATE + GET_TRAIN_STATE + SMALL +
            "train_state = init_train_state(config)  # not the cookbook's\n",
            values=("train_state",), shardings=("train_state",),
            xfail=TREE),
    example("training_cookbook:train_step", "# tag: train-step",
            BASE + GET_PARAM_STATE + MODEL_APPLY + GET_ADAM_STATE + ADAM_APPLY +
            GET_TRAIN_STATE + TRAIN_STEP + SMALL + TOKENS +
            "train_state = jax.tree.map(jax.ref.new_ref, init_train_state(config))\n"
            "metrics = train_step(config, train_state, {'observed_ids': tokens, "
            "'target_ids': np.roll(tokens, -1, axis=1)})  # not the cookbook's\n",
            values=("metrics",), rtol=1e-4, atol=1e-4,
            xfail=TREE + "; " + REF[len("not in issue 45: "):]),
    example("training_cookbook:record_writer", "# tag: record-writer",
            PLAIN + RECORD_WRITER + "record_writer = RecordWriter()\n"
            "for step in range(3):  # not the cookbook's\n"
            "  record_writer({'step': step, 'train_loss': 1.0 / (step + 1)})\n",
            stdout="text"),
    example("training_cookbook:get_dataset", "# tag: get-dataset",
            BASE + GET_DATASET + SMALL + "batch = next(get_dataset(config))"
            "  # not the cookbook's\n", values=("batch",)),
    example("training_cookbook:get_dataset_on_device", "# tag: get-dataset-on-device",
            BASE + GET_DATASET + GET_DATASET_ON_DEVICE + SMALL +
            "batch = next(iter(get_dataset_on_device(config)))  # not the cookbook's\n",
            values=("batch",), shardings=("batch",)),
    example("training_cookbook:train_loop", "# tag: train-loop",
            BASE + GET_PARAM_STATE + MODEL_APPLY + GET_ADAM_STATE + ADAM_APPLY +
            GET_TRAIN_STATE + TRAIN_STEP + RECORD_WRITER + GET_DATASET + GET_DATASET_ON_DEVICE +
            TRAIN_LOOP + SMALL.replace("host_batch_size=8,", "host_batch_size=8, "
                                       "num_train_steps=3,") +
            "train_loop(config)  # not the cookbook's\n", stdout="numbers", rtol=1e-4,
            atol=1e-4, xfail=TREE + "; " + REF[len("not in issue 45: "):]),
]
