"""examples/gpt.py at a tiny size (width 32, 2 layers, 4 heads, context 16, batch 8): 20
AdamW steps give JAX's losses (examples/gpt_jax.py, the same model from the same
parameters and batches) on one device and on a 2x2 mesh; the Evaluator's simulated mesh
gives them for 2 steps, with the loss on the global view and on the local view
(``--shard-map``); on the mesh, steps after the first trace, compile and transfer
nothing; a run resumed from an ``nx.save`` checkpoint is bit-identical to the
uninterrupted run; sampling with the KV cache is deterministic for a seed; the progress
lines, bars and loss plot a person running it sees."""
import dataclasses
import io
import re
import sys

import numpy as np
import pytest

from helpers import close, load_example

from nxpy import telemetry

STEPS = 20
RTOL = 1e-4
# the tests that compare with JAX share one worker (make test runs --dist loadgroup), so
# JAX's step, the slowest compile here, is compiled once
WITH_JAX = pytest.mark.xdist_group("gpt_jax")


@pytest.fixture(scope="module")
def gpt():
    return load_example("gpt")


@pytest.fixture(scope="module")
def gpt_jax(gpt):                     # after gpt: nxpy starts XLA before JAX
    return load_example("gpt_jax")


@pytest.fixture(scope="module")
def cfg(gpt):
    return gpt.Config(layers=2, width=32, heads=4, context=16, batch=8, steps=STEPS,
                      warmup=5)


@pytest.fixture(scope="module")
def batches(gpt, cfg):
    train, _ = gpt.corpus()
    return [gpt.batch(train, cfg, i) for i in range(STEPS)]


@pytest.fixture(scope="module")
def jax_losses(gpt, gpt_jax, cfg, batches):
    params = gpt.tree_map(lambda p: np.asarray(p.to_numpy()), gpt.init_params(cfg))
    return gpt_jax.train(cfg, params, batches)


def test_data_split_and_batches(gpt, cfg, batches):
    train, val = gpt.corpus()
    assert len(train) + len(val) == 1115394 and len(train) == int(1115394 * 0.9)
    x, y = batches[3]
    assert x.shape == y.shape == (cfg.batch, cfg.context) and x.dtype == np.int32
    np.testing.assert_array_equal(x[:, 1:], y[:, :-1])             # y is x shifted by one
    np.testing.assert_array_equal(gpt.batch(train, cfg, 3)[0], x)  # seeded by (seed, step)
    assert not np.array_equal(batches[4][0], x)


@WITH_JAX
def test_one_device_equals_jax(gpt, cfg, jax_losses):
    losses = gpt.run(cfg)[0]
    close(losses, jax_losses, RTOL, 0)
    assert np.mean(losses[-3:]) < losses[0] - 0.5, losses          # it learns


@WITH_JAX
def test_mesh_equals_jax_and_steps_stay_on_device(gpt, cfg, batches, jax_losses):
    """On the 2x2 mesh: the losses, the parameters' layouts, and after the first step no
    trace, no compile and no host transfer (the batches placed beforehand; the losses
    read afterwards)."""
    tr = gpt.Trainer(cfg, mesh=gpt.parse_mesh("2x2"))
    params, state = tr.start()
    placed = [tr.place_batch(x, y) for x, y in batches]
    params, state, first = tr.step(params, state, *placed[0])
    before = telemetry.counters()
    losses = [first]
    for x, y in placed[1:]:
        params, state, loss = tr.step(params, state, x, y)
        losses.append(loss)
    after = telemetry.counters()
    delta = {k: after.get(k, 0) - before.get(k, 0)
             for k in ("trace", "compile", "transfer_to_device", "transfer_to_host")}
    assert delta == dict.fromkeys(delta, 0), delta
    close([float(v.to_numpy()) for v in losses], jax_losses, RTOL, 0)
    assert str(params["blocks"]["wq"].sharding.spec) == "P(None, None, 'model')"
    assert state["m"]["blocks"]["w2"].sharding == params["blocks"]["w2"].sharding
    assert str(params["blocks"]["w2"].sharding.spec) in ("P(None, 'model')",
                                                         "P(None, 'model', None)")
    assert str(params["wte"].sharding.spec) == "P()"


@WITH_JAX
def test_mesh_on_the_evaluator(gpt, cfg, jax_losses):
    """The Evaluator simulates the mesh: the same first 2 losses."""
    losses = gpt.run(cfg, mesh=gpt.parse_mesh("2x2"), compiler="evaluator", steps=2)[0]
    close(losses, jax_losses[:2], RTOL, 0)


@WITH_JAX
def test_shard_map_loss_on_the_evaluator(gpt, cfg, jax_losses):
    """``--shard-map``: the loss written on the local view (the layers a scan whose
    blocks psum over "model") gives the same first 2 losses."""
    tr = gpt.Trainer(cfg, mesh=gpt.parse_mesh("2x2"), compiler="evaluator", local_view=True)
    losses = gpt.run(cfg, trainer=tr, steps=2)[0]
    close(losses, jax_losses[:2], RTOL, 0)


def test_resume_is_bit_identical(gpt, cfg, tmp_path):
    """10 steps, a checkpoint (sharded tensors, on the mesh), 10 more from it: the losses
    and the final parameters of the uninterrupted 20 steps, bit for bit."""
    tr = gpt.Trainer(cfg, mesh=gpt.parse_mesh("2x2"))
    whole, p_whole, _, _ = gpt.run(cfg, trainer=tr)
    first, params, state, _ = gpt.run(cfg, trainer=tr, steps=10)
    path = tmp_path / "gpt.nx"
    gpt.save(path, params, state, 10)
    start = gpt.load(path, tr)
    assert start[2] == 10 and start[0]["blocks"]["w1"].sharding == params["blocks"][
        "w1"].sharding
    rest, p_rest, _, _ = gpt.run(cfg, trainer=tr, start=start)
    assert first + rest == whole
    for a, b in zip(gpt.leaves(p_rest), gpt.leaves(p_whole)):
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())


def test_sampling_is_deterministic(gpt, cfg):
    params = gpt.init_params(cfg)
    sampler = gpt.make_sampler(cfg, 12, temperature=0.8, top_k=5)
    a = gpt.generate(params, cfg, b"ROMEO:", 12, seed=1, sampler=sampler)
    b = gpt.generate(params, cfg, b"ROMEO:", 12, seed=1, sampler=sampler)
    c = gpt.generate(params, cfg, b"ROMEO:", 12, seed=2, sampler=sampler)
    assert a == b and a.startswith("ROMEO:") and len(a.encode("utf-8", "replace")) >= 12
    assert a != c


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_lines_bars_and_plot(gpt, cfg, tmp_path, monkeypatch):
    """What a person running it sees: a progress line per N steps with the validation
    loss and the step's device memory (XLA's), a bar while the step compiles and during
    evaluation (on a terminal only), and the loss curves written as a PNG."""
    err = _Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    lines = []
    _, _, _, history = gpt.run(dataclasses.replace(cfg, steps=4), every=2, val_batches=2,
                               log=lines.append)
    assert [h[0] for h in history] == [2, 4] and all(np.isfinite(h[2]) for h in history)
    assert len(lines) == 2 and lines[1].startswith("step     4")
    peak = float(re.search(r"step ([0-9.]+) MiB/device", lines[0]).group(1))
    assert 1 < peak < 10, lines[0]              # params, AdamW state, activations: ~2.4 MiB
    shown = err.getvalue()
    assert "compiling the training step" in shown
    assert "validation [############............] 1/2" in shown and "2/2" in shown
    gpt.plot(history, tmp_path / "loss.png")
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    quiet = _Terminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    gpt.run(dataclasses.replace(cfg, steps=2), every=2, val_batches=1)   # no log: no bars
    assert quiet.getvalue() == ""
