"""Training a 2-layer MLP data-parallel and tensor-parallel with shard_map: nxpy's
Evaluator, nxpy's EXLA and JAX, step for step. Run with `make train`.

The data: two interleaved spirals (256 points in the plane, two classes), made with NumPy
from a fixed seed. The model: ``logits = tanh(x @ w1 + b1) @ w2 + b2``, softmax
cross-entropy, plain gradient descent.

The layout, on a 2x2 mesh with axes ("batch", "hidden") (4 of the host CPU devices):

* the batch (``x``, the one-hot labels ``y``) is split over "batch": data parallel;
* the hidden units are split over "hidden": ``w1``'s columns, ``b1``, ``w2``'s rows
  (tensor parallel, Megatron style); ``b2`` is replicated.

Each device computes its half of the hidden units for its half of the batch, and its
partial ``h @ w2``; a ``psum`` over "hidden" completes the logits, and a ``psum`` over
"batch" the loss. Accuracy gathers the predictions over "batch" with ``all_gather``.

The data lives on the devices, laid out as the ``shard_map`` reads it: the parameters
and the batch are placed once with ``nx.device_put(x, nx.NamedSharding(MESH, spec))``,
the jitted step takes and returns sharded tensors (its parameters donated, so each step
updates them in place on every device), and nothing goes through the host between steps
but the loss, read at the end. The same layout in JAX: ``jax.device_put`` with the same
specs, the same step.

The same program is written once more with ``jax.shard_map`` and ``jax.value_and_grad``,
from the same initial weights, and the three loss curves are compared.

    train(compiler, steps)  -> list of losses (nxpy; compiler "evaluator" or "exla")
    train_jax(steps)        -> list of losses (JAX)
    train_data_parallel(steps) -> the same losses, each process loading its own rows

Across processes (data parallel: each process holds only its own half of the batch, the
mesh's "batch" axis runs across the processes; the same loss curve as in one process):

    python -m nxpy.launch -n 2 --local-devices 2 examples/train.py --data-parallel 100
"""
import functools
import sys
import time

import numpy as np

import nxpy as nx
from nxpy import pjrt

pjrt.devices()  # nxpy starts XLA (8 host CPU devices) before JAX is imported: one client

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh as JaxMesh, NamedSharding, PartitionSpec as P  # noqa: E402

from nxpy import distributed  # noqa: E402
from nxpy.defn import all_gather, jit, psum, shard_map, value_and_grad  # noqa: E402

N_POINTS = 256
HIDDEN = 32
CLASSES = 2
LEARNING_RATE = 0.5
STEPS = 1000
EVERY = 100  # print the losses every EVERY steps
AXES = ("batch", "hidden")

# one spec per argument of the shard_map body (x, y, w1, b1, w2, b2), as JAX-style
# per-dim tuples; a list, since a tuple of tuples would read as one per-dim spec
IN_SPECS = [("batch", None), ("batch", None), (None, "hidden"), ("hidden",),
            ("hidden", None), (None,)]
BATCH_SPEC, PARAM_SPECS = nx.P(*IN_SPECS[0]), [nx.P(*s) for s in IN_SPECS[2:]]


# ----------------------------------------------------------------------------------------
# Data and initial weights (NumPy, fixed seeds): the same for all three runs
# ----------------------------------------------------------------------------------------
def spirals(n=N_POINTS, seed=0, turns=1.0, noise=0.02):
    """``(x, labels)``: ``n`` points on two interleaved spirals, f32[n][2] and int[n]."""
    rng = np.random.default_rng(seed)
    m = n // 2
    t = np.sqrt(rng.uniform(0, 1, m)) * turns * 2 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (turns * 2 * np.pi)
    x = np.concatenate([arm, -arm]) + rng.normal(0, noise, (n, 2))
    labels = np.repeat([0, 1], m)
    perm = rng.permutation(n)
    return x[perm].astype(np.float32), labels[perm]


def init_params(hidden=HIDDEN, seed=1):
    """``(w1, b1, w2, b2)`` as f32 NumPy arrays."""
    rng = np.random.default_rng(seed)
    return (rng.normal(0, 2.0, (2, hidden)).astype(np.float32),
            np.zeros(hidden, np.float32),
            (rng.normal(0, 1.0, (hidden, CLASSES)) / np.sqrt(hidden)).astype(np.float32),
            np.zeros(CLASSES, np.float32))


def data(n=N_POINTS):
    x, labels = spirals(n)
    return x, np.eye(CLASSES, dtype=np.float32)[labels], labels


# ----------------------------------------------------------------------------------------
# nxpy
# ----------------------------------------------------------------------------------------
MESH = nx.Mesh("train", (2, 2), axis_names=AXES)


def _nx_logits(x, w1, b1, w2, b2):
    """This device's logits for its rows of the batch (all the classes)."""
    h = nx.tanh(nx.dot(x, w1) + b1)                # its hidden units only
    return psum(nx.dot(h, w2), "hidden") + b2       # the partial products, summed


def _nx_body(x, y, w1, b1, w2, b2):
    logits = _nx_logits(x, w1, b1, w2, b2)
    top = nx.reduce_max(logits, axes=[1], keep_axes=True)
    lse = nx.log(nx.sum(nx.exp(logits - top), axes=[1], keep_axes=True)) + top
    n = x.shape[0] * MESH.shape[0]                 # the global batch
    return psum(nx.sum((lse - logits) * y), "batch") / n


_nx_loss_map = shard_map(_nx_body, MESH, in_specs=IN_SPECS, out_specs=())


def nx_loss(params, x, y):
    """The global loss: one shard_map over the mesh."""
    return _nx_loss_map(x, y, *params)


# The gradient is taken of the global loss, the function that calls shard_map, not
# inside the body followed by a pmean. nxpy transposes the shard_map as JAX does, working
# out from the specs and the collectives where cotangents must be summed across devices:
# the weights are replicated over "batch" while each device's share of their gradient
# comes from its own rows, so their gradients get a psum over "batch"; the psum over
# "hidden" of the forward pass becomes a broadcast in the backward pass. The loss is
# written once, for the whole batch, and means what it says.
#
# Inside the body the classic "local gradient, then pmean over 'batch'" recipe is a trap
# under JAX's rules, which nxpy follows: a weight that does not vary over "batch" gets a
# gradient already summed over "batch" (the implicit broadcast of the weight to every
# batch shard transposes to a psum), so the pmean changes nothing and the step is the
# sum of the per-shard gradients, here twice the gradient of the mean loss (the same in
# nxpy and in JAX with check_vma=True).
def nx_step(params, x, y, lr):
    loss, grads = value_and_grad(nx_loss)(params, x, y)
    return loss, tuple(p - lr * g for p, g in zip(params, grads))


def _nx_predict(x, w1, b1, w2, b2):
    labels = nx.argmax(_nx_logits(x, w1, b1, w2, b2), axis=1)
    return all_gather(labels, axes="batch", all_gather_dim=0)   # every device: all labels


_nx_predict_map = shard_map(_nx_predict, MESH, in_specs=IN_SPECS[:1] + IN_SPECS[2:],
                            out_specs=(None,))


def place(compiler, params, x, y, lr, *, local=False):
    """The parameters, the batch and the learning rate on the mesh's devices, each laid
    out as the step reads it (the Evaluator's tensors: its simulation of the devices).
    ``local``: ``x`` and ``y`` are this process's own rows of the batch (each process of
    a multi-process run loads only its block)."""
    backend = "exla" if compiler == "exla" else "numpy"

    def put(value, spec):
        return nx.device_put(value, nx.NamedSharding(MESH, spec), backend=backend)

    def put_batch(value):
        if not local:
            return put(value, BATCH_SPEC)
        return distributed.make_array_from_process_local_data(
            nx.NamedSharding(MESH, BATCH_SPEC), value, backend=backend)
    return (tuple(put(p, s) for p, s in zip(params, PARAM_SPECS)), put_batch(x), put_batch(y),
            put(np.float32(lr), nx.P()))


def fit(compiler, steps, *, lr=LEARNING_RATE, n=N_POINTS, hidden=HIDDEN, accuracy=True,
        local_rows=None):
    """``(losses, accuracy)`` after ``steps`` steps of gradient descent with nxpy's
    ``compiler``; ``losses[i]`` is the loss before step ``i``'s update (``accuracy`` is
    None when not asked for). ``local_rows``: this process's slice of the batch (each
    process places only its own rows)."""
    x, y, labels = data(n)
    local = local_rows is not None
    if local:
        x, y = x[local_rows], y[local_rows]
    step = jit(nx_step, compiler=compiler, donate_argnums=0)  # params updated in place
    params, x, y, rate = place(compiler, init_params(hidden), x, y, lr, local=local)
    losses = []
    for _ in range(steps):
        loss, params = step(params, x, y, rate)  # sharded in, sharded out: no host copy
        losses.append(loss)
    losses = [float(v.to_numpy()) for v in losses]  # each replicated: read one copy
    if not accuracy:
        return losses, None
    predict = jit(lambda x, p: _nx_predict_map(x, *p), compiler=compiler)
    return losses, float(np.mean(predict(x, params).to_numpy() == labels))


def train(compiler, steps, **kw):
    """The loss before each of ``steps`` steps, trained with nxpy's ``compiler``."""
    return fit(compiler, steps, accuracy=False, **kw)[0]


# ----------------------------------------------------------------------------------------
# Data parallel across processes: the mesh's "batch" axis spans the processes, and each
# process loads only its own rows of the batch
# ----------------------------------------------------------------------------------------
def train_data_parallel(steps, *, lr=LEARNING_RATE, n=N_POINTS, hidden=HIDDEN):
    """The loss before each step, each process holding only its own rows of the batch
    (process i: block i, as ``nxpy.distributed.make_array_from_process_local_data``
    takes it); in one process, the whole batch. The same curve as ``train("exla",
    steps)``."""
    k, me = distributed.process_count(), distributed.process_index()
    return train("exla", steps, lr=lr, n=n, hidden=hidden,
                 local_rows=slice(me * n // k, (me + 1) * n // k))


def main_data_parallel(steps):
    losses = train_data_parallel(steps)
    if distributed.process_index() == 0:
        print(f"data parallel over {distributed.process_count()} process(es), mesh "
              f"{MESH.shape} {AXES}, {steps} steps")
        for i, v in enumerate(losses):
            print(f"loss {i} {v!r}")
    distributed.shutdown()
    return 0


# ----------------------------------------------------------------------------------------
# JAX: the same program
# ----------------------------------------------------------------------------------------
def _jax_mesh():
    devices = pjrt.devices()
    return JaxMesh(np.array([devices[i] for i in MESH.devices]).reshape(MESH.shape), AXES)


def _jax_logits(x, w1, b1, w2, b2):
    h = jnp.tanh(x @ w1 + b1)
    return jax.lax.psum(h @ w2, "hidden") + b2


def _jax_body(x, y, w1, b1, w2, b2):
    logits = _jax_logits(x, w1, b1, w2, b2)
    top = jnp.max(logits, axis=1, keepdims=True)
    lse = jnp.log(jnp.sum(jnp.exp(logits - top), axis=1, keepdims=True)) + top
    n = x.shape[0] * MESH.shape[0]
    return jax.lax.psum(jnp.sum((lse - logits) * y), "batch") / n


def _jax_predict(x, w1, b1, w2, b2):
    labels = jnp.argmax(_jax_logits(x, w1, b1, w2, b2), axis=1)
    return jax.lax.all_gather(labels, "batch", axis=0, tiled=True)


def fit_jax(steps, *, lr=LEARNING_RATE, n=N_POINTS, hidden=HIDDEN, accuracy=True):
    mesh = _jax_mesh()
    specs = tuple(P(*s) for s in IN_SPECS)
    loss_map = jax.shard_map(_jax_body, mesh=mesh, in_specs=specs, out_specs=P())
    # JAX's vma check counts an all_gather's result as still varying over "batch" (nxpy
    # knows it is replicated); the values are equal on every device, so the check is off
    predict_map = jax.shard_map(_jax_predict, mesh=mesh, in_specs=specs[:1] + specs[2:],
                                out_specs=P(None), check_vma=False)

    def loss_fn(params, x, y):
        return loss_map(x, y, *params)

    @functools.partial(jax.jit, donate_argnums=0)
    def step(params, x, y, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return loss, tuple(p - lr * g for p, g in zip(params, grads))

    x, y, labels = data(n)

    def put(value, spec):
        return jax.device_put(value, NamedSharding(mesh, spec))
    params = tuple(put(p, s) for p, s in zip(init_params(hidden), specs[2:]))
    x, y, rate = put(x, specs[0]), put(y, specs[1]), put(np.float32(lr), P())
    losses = []
    for _ in range(steps):
        loss, params = step(params, x, y, rate)
        losses.append(loss)
    losses = [float(v) for v in losses]
    if not accuracy:
        return losses, None
    return losses, float(np.mean(np.asarray(jax.jit(predict_map)(x, *params)) == labels))


def train_jax(steps, **kw):
    """The loss before each of ``steps`` steps, trained with JAX."""
    return fit_jax(steps, accuracy=False, **kw)[0]


# ----------------------------------------------------------------------------------------
# Comparing the curves
# ----------------------------------------------------------------------------------------
def max_rel_diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.abs(b)))


def main(steps=STEPS, every=EVERY):
    runs = {}
    for name, run in [("evaluator", lambda: fit("evaluator", steps)),
                      ("exla", lambda: fit("exla", steps)),
                      ("jax", lambda: fit_jax(steps))]:
        t0 = time.perf_counter()
        losses, accuracy = run()
        runs[name] = (losses, accuracy, time.perf_counter() - t0)

    labels = {"evaluator": "nxpy Evaluator", "exla": "nxpy EXLA", "jax": "JAX"}
    print(f"MLP 2 -> {HIDDEN} (tanh) -> {CLASSES}, {N_POINTS} points on two spirals, "
          f"{steps} steps of gradient descent, lr {LEARNING_RATE}")
    print('shard_map on a 2x2 mesh: the batch split over "batch", the hidden units over '
          '"hidden"\n')
    print(f"{'step':>6}  {labels['evaluator']:>14}  {labels['exla']:>10}  "
          f"{labels['jax']:>10}")
    shown = sorted(set(range(0, steps, every)) | {steps - 1})
    for i in shown:
        print(f"{i:>6}  {runs['evaluator'][0][i]:>14.6f}  {runs['exla'][0][i]:>10.6f}  "
              f"{runs['jax'][0][i]:>10.6f}")
    jax_losses = runs["jax"][0]
    print(f"\nmax relative difference from JAX's loss over all {steps} steps: " + ", ".join(
        f"{labels[n]} {max_rel_diff(runs[n][0], jax_losses):.1e}"
        for n in ("evaluator", "exla")).replace("nxpy ", ""))
    print("accuracy: " + ", ".join(f"{labels[n]} {runs[n][1]:.1%}" for n in runs))
    print("time, compiling included: " + ", ".join(f"{labels[n]} {runs[n][2]:.1f} s"
                                                   for n in runs))
    worst = max(max_rel_diff(runs[name][0], jax_losses) for name in ("evaluator", "exla"))
    falls = all(runs[name][0][-1] < runs[name][0][0] / 10 for name in runs)
    return 0 if worst <= 1e-5 and falls else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--data-parallel":
        sys.exit(main_data_parallel(int(sys.argv[2]) if len(sys.argv) > 2 else 100))
    sys.exit(main())
