"""examples/train.py, a few steps: the MLP trained with shard_map on a 2x2 mesh gives the
same loss curve on nxpy's Evaluator, nxpy's EXLA and JAX, and the loss falls."""
import numpy as np
import pytest

from helpers import COMPILERS, load_example

STEPS = 5


@pytest.fixture(scope="module")
def train():
    return load_example("train")


@pytest.fixture(scope="module")
def curves(train):
    return {"evaluator": train.train("evaluator", STEPS),
            "exla": train.train("exla", STEPS),
            "jax": train.train_jax(STEPS)}


@pytest.mark.parametrize("compiler", COMPILERS)
def test_loss_curve_equals_jax(curves, compiler):
    nx_losses, jax_losses = np.array(curves[compiler]), np.array(curves["jax"])
    assert nx_losses.shape == (STEPS,)
    np.testing.assert_allclose(nx_losses, jax_losses, rtol=1e-5, atol=0)


@pytest.mark.parametrize("run", ["evaluator", "exla", "jax"])
def test_loss_decreases(curves, run):
    losses = curves[run]
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.9 * losses[0], losses



def test_data_parallel_step_same_curve(train, curves):
    """The shard_jit data-parallel step (examples/train.py --data-parallel) in one
    process: the same losses as the jit step (tests/test_distributed.py runs it over 2
    processes)."""
    assert train.train_data_parallel(STEPS) == curves["exla"]
