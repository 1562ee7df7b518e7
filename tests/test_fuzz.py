"""The differential fuzzer's fast slice (nxpy.testing.fuzz): random programs on the NumPy
backend, the Evaluator, EXLA and the StableHLO round trip, against one another and
jax.numpy; every tenth a sharded program against JAX's shard_map, its StableHLO module
loaded back and run with shard_jit per device. ``make fuzz`` runs more.

Every fifth single-device program of the slice is also batched (``check_vmap``: vmap on
three examples against the examples run alone, and jax.vmap). A failure prints the
program and a one-line repro command. NXPY_FUZZ_SEED, NXPY_FUZZ_N and NXPY_FUZZ_VMAP_EVERY
choose the slice (default: seed 17, 200 programs, vmap every 5th). Below the slice: the
mismatches the fuzzer found, as fixed programs, and the vmap check's own tests.
"""
import contextlib
import dataclasses
import os

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import jit
from nxpy.ops.core import BATCH_RULES
from nxpy.defn.transforms.jvp_rules import JVP_RULES
from nxpy.testing import fuzz
from nxpy.testing.fuzz import Leaf, Program, Step

from helpers import COMPILERS

SEED = int(os.environ.get("NXPY_FUZZ_SEED", "17"))
N = int(os.environ.get("NXPY_FUZZ_N", "200"))
VMAP_EVERY = int(os.environ.get("NXPY_FUZZ_VMAP_EVERY", "5"))  # make fuzz: every program


def _program(k):
    return fuzz.generate_sharded(SEED, k) if k % 10 == 9 else fuzz.generate(SEED, k)


@pytest.mark.parametrize("k", range(N), ids=lambda k: f"seed{SEED}-{k}")
def test_fuzz_slice(k):
    prog = _program(k)
    try:
        fuzz.check(prog, vmap=k % VMAP_EVERY == 0)
    except fuzz.Mismatch as err:
        pytest.fail(f"fuzz seed {SEED}, program {k}: {err}", pytrace=False)


def test_the_generator_is_deterministic_and_covers_the_families():
    a, b = fuzz.generate(SEED, 5), fuzz.generate(SEED, 5)
    assert str(a) == str(b) and [x.array().tolist() for x in a.leaves()] == \
        [x.array().tolist() for x in b.leaves()]
    # every op with a twin is drawn (a twin without a draw would be fuzzed never)
    ops = {n.op for k in range(1000) for n in fuzz.generate(0, k).nodes if isinstance(n, Step)}
    assert not set(fuzz.OPS) - ops, f"twins never drawn: {sorted(set(fuzz.OPS) - ops)}"
    assert any(fuzz.generate(SEED, k).grad for k in range(50))
    kinds = {fuzz.generate_sharded(SEED, k).kind for k in range(20)}
    assert kinds == {"shard_map", "shard_jit"}


def test_a_mismatch_names_the_program_and_a_repro_command():
    prog = Program(3, 4, [Leaf((2,), "f32", data=[1.0, 2.0]), Step("exp", (0,), {})],
                   ["f32", "f32"], (1,))
    saved = fuzz.OPS["exp"]
    fuzz.OPS["exp"] = (lambda x: nx.exp(x) + 1, saved[1])  # a wrong nxpy program
    try:
        with pytest.raises(fuzz.Mismatch) as e:
            fuzz.check(prog)
    finally:
        fuzz.OPS["exp"] = saved
    msg = str(e.value)
    assert "n1 = exp(n0)" in msg and "python -m nxpy.testing.fuzz --seed 3 --index 4 --show" in msg


def test_the_tolerance_follows_the_least_precise_type_a_result_is_computed_from():
    tol = fuzz.TOLERANCES
    # n2 = f64(n1), n1 = exp(n0) in f32: n2 carries f32's error; n4 = exp(n3) is f64 only
    prog = Program(0, 0, [Leaf((2,), "f32"), Step("exp", (0,), {}),
                          Step("as_type", (1,), {"type": "f64"}), Leaf((2,), "f64"),
                          Step("exp", (3,), {}), Leaf((2,), "bf16"), Leaf((2,), "s8")],
                   ["f32", "f32", "f64", "f64", "f64", "bf16", "s8"], (2, 4, 1, 5, 6))
    assert fuzz.tolerances(prog) == [tol["float32"], tol["float64"], tol["float32"],
                                     tol["bfloat16"], (0, 0)]
    # a grad program's gradients: every type its forward output is computed from
    prog = Program(0, 0, [Leaf((2,), "f64"), Step("as_type", (0,), {"type": "f32"}),
                          Step("exp", (1,), {}), Leaf((2,), "f64")],
                   ["f64", "f32", "f32", "f64"], (2,), grad=True)
    assert fuzz.tolerances(prog) == [tol["float32"], tol["float32"]]
    match = fuzz.compare._values_match
    assert match(np.float64([1.0]), np.float64([1.0 + 1e-7]), tol["float32"]) is None
    assert match(np.float64([1.0]), np.float64([1.0 + 1e-7]), (0, 0)) is not None
    assert match(np.int32([1]), np.int32([2]), tol["float32"]) is not None


@pytest.mark.parametrize("bf16_output", [False, True])
def test_an_f32_error_beside_an_unrelated_bf16_value_is_a_mismatch(monkeypatch, bf16_output):
    # exp off by 1e-3 (relative): beyond f32's tolerance (2e-4), within bf16's (6e-2). The
    # bf16 value (an output, or not) is not computed from the f32 one nor feeds it, so the
    # f32 result is held to f32's tolerance (the fuzzer once held every result to the
    # loosest type anywhere in the program, and let this pass)
    nodes = [Leaf((3,), "f32", data=[0.5, 1.0, 1.5]), Step("exp", (0,), {}),
             Leaf((3,), "bf16", data=[0.5, 1.0, 1.5]), Step("exp", (2,), {})]
    prog = _fixed(nodes, (1, 3) if bf16_output else (1,))
    fuzz.check(prog)
    nxf, jx = fuzz.OPS["exp"]
    monkeypatch.setitem(fuzz.OPS, "exp", (lambda x: nxf(x) * 1.001, jx))
    with pytest.raises(fuzz.Mismatch,
                       match=r"result 0: the NumPy backend vs JAX: values differ beyond "
                             r"rtol=0\.0002"):
        fuzz.check(prog)
    # the same error in a bf16 result is within bf16's tolerance
    fuzz.check(_fixed(nodes[2:3] + [Step("exp", (0,), {})], (1,)))


# ----------------------------------------------------------------------------------------
# Regressions: mismatches the fuzzer found, as fixed programs
# ----------------------------------------------------------------------------------------
def _fixed(nodes, outputs, grad=False, seed=0, index=0):
    """A hand-written description as a Program (types inferred as the generator does)."""
    with fuzz.program._numpy_backend():
        vals = []
        for n in nodes:
            if isinstance(n, Leaf):
                vals.append(nx.tensor(n.array(), type=n.type,
                                      names=list(n.names) if n.names else None))
            else:
                vals.append(fuzz.OPS[n.op][0](*[vals[a] for a in n.args], **n.kw))
    return Program(seed, index, nodes, [str(v.type) for v in vals], outputs, grad)


def _check_fixed(nodes, outputs, grad=False):
    """Checks a hand-written description."""
    fuzz.check(_fixed(nodes, outputs, grad))


def test_regression_evaluator_keeps_the_names_of_a_renamed_output():
    # seed 2 #116: broadcast to a tensor's own shape drops its names (as Nx); the Evaluator
    # returned the input's names when that renamed tensor was the program's output
    x = nx.tensor([[1.0, 2.0]], names=["h", None])
    for compiler in COMPILERS:
        assert jit(lambda x: nx.broadcast(x, (1, 2)), compiler=compiler)(x).names == (None, None)
    _check_fixed([Leaf((4, 3), "f32", ("h", None), seed=1),
                  Step("broadcast", (0,), {"shape": (4, 3)})], (1,))


def test_regression_conv_kernel_dilation_skips_the_holes():
    # seed 2 #70: the NumPy kernel multiplied the zeros of a dilated kernel by the input,
    # so an inf under a hole made NaN where XLA (and JAX) skip the hole
    x = np.array([[[-np.inf, 0.5, -1.0, -2.875]]], np.float32)
    k = np.array([[[2.0, 3.0]]], np.float32)
    def f(x, k):
        return nx.conv(x, k, padding=[(1, 1)], kernel_dilation=[2], strides=[2])
    want = [[[1.5, 1.0 - 8.625]]]  # the taps at offsets 0 and 2 never meet the inf
    for compiler in COMPILERS:
        got = jit(f, compiler=compiler)(nx.tensor(x), nx.tensor(k))
        np.testing.assert_array_equal(got.to_numpy(), want)
    np.testing.assert_array_equal(f(nx.tensor(x), nx.tensor(k)).to_numpy(), want)
    _check_fixed([Leaf((2, 2, 3), "f16", seed=4), Leaf((2, 1, 2), "f16", seed=5),
                  Step("conv", (0, 1), {"strides": [2], "padding": [[1, 1]], "input_dilation": [2],
                                        "kernel_dilation": [2], "groups": 2})], (2,))


# ----------------------------------------------------------------------------------------
# The sharded programs' StableHLO round trip
# ----------------------------------------------------------------------------------------
def _sharded_of_kind(kind):
    return next(p for p in (fuzz.generate_sharded(SEED, k) for k in range(50)) if p.kind == kind)


class _OffByOneOnTheLastDevice:
    """A loaded program whose ``shard_jit`` on ``compiler`` returns the last device's
    results plus one: a loader bug the round trip must report."""

    def __init__(self, prog, compiler):
        self.prog, self.compiler = prog, compiler

    def shard_jit(self, compiler, **opts):
        run = self.prog.shard_jit(compiler, **opts)
        if compiler != self.compiler:
            return run

        def wrong(per_device):
            outs = list(run(per_device))
            outs[-1] = nx.add(outs[-1], 1)
            return outs
        return wrong


@pytest.mark.parametrize("kind", ["shard_map", "shard_jit"])
@pytest.mark.parametrize("compiler", ["exla", "evaluator"])
def test_a_wrong_loaded_sharded_module_is_a_mismatch(monkeypatch, kind, compiler):
    prog = _sharded_of_kind(kind)
    fuzz.check(prog)  # the real loader: no mismatch
    real = fuzz.sharded.load
    seen = []

    def broken(text):
        seen.append(text)
        return _OffByOneOnTheLastDevice(real(text), compiler)
    monkeypatch.setattr(fuzz.sharded, "load", broken)
    with pytest.raises(fuzz.Mismatch) as e:
        fuzz.check(prog)
    msg = str(e.value)
    assert "sdy.mesh @fuzz" in seen[0]  # the sharded module (the mesh stated in it) was loaded
    n = prog.mesh_shape[0] * prog.mesh_shape[1]
    assert f"stablehlo/{compiler} vs {compiler}, device {n - 1}" in msg and "differs" in msg
    assert f"--sharded --seed {SEED} --index {prog.index} --show" in msg and "--- module ---" in msg


@pytest.mark.parametrize("kind", ["shard_map", "shard_jit"])
def test_a_sharded_module_that_does_not_load_is_a_mismatch(monkeypatch, kind):
    prog = _sharded_of_kind(kind)

    def broken(text):
        raise ValueError("the loader is broken")
    monkeypatch.setattr(fuzz.sharded, "load", broken)
    with pytest.raises(fuzz.Mismatch,
                       match="stablehlo failed: ValueError: the loader is broken") as e:
        fuzz.check(prog)
    assert f"--sharded --seed {SEED} --index {prog.index} --show" in str(e.value)


# ----------------------------------------------------------------------------------------
# The vmap check
# ----------------------------------------------------------------------------------------
def _exp_program(grad):
    """exp of a batched f32 input (grad: its per-example gradient, exp again)."""
    leaf = Leaf((2, 3), "f32", ("h", None), lo=-2, hi=2, grid=False, seed=11)
    return _fixed([leaf, Step("exp", (0,), {})], (1,), grad=grad, seed=3, index=4)


def _off_by_one(rule):
    def wrong(ctx, e, xs, dims):
        v, d = rule(ctx, e, xs, dims)
        return nx.add(v, nx.tensor(1, type=v.type)), d
    return wrong


@pytest.mark.parametrize("grad", [False, True])
def test_a_wrong_batching_rule_is_a_vmap_mismatch_with_a_repro(monkeypatch, grad):
    prog = _exp_program(grad)
    spec = fuzz.vmap_spec(prog)
    fuzz.check(prog, vmap=True)  # the real rule: no mismatch
    fuzz.check(prog)  # without vmap=True the rule is not exercised: no mismatch either
    monkeypatch.setitem(BATCH_RULES, "exp", _off_by_one(BATCH_RULES["exp"]))
    fuzz.check(prog)
    with pytest.raises(fuzz.Mismatch) as e:
        fuzz.check(prog, vmap=True)
    msg = str(e.value)
    assert msg.startswith("vmap: vmap/evaluator result 0 vs the examples run alone")
    assert "differ" in msg
    assert f"in_axes={spec.in_axes!r}" in msg and "n0 example 1: input f32[2, 3]" in msg
    assert "python -m nxpy.testing.fuzz --seed 3 --index 4 --vmap --show" in msg
    assert ("(grad of sum)" in msg) == grad


def test_jax_vmap_of_the_twin_is_the_second_oracle(monkeypatch):
    prog = _exp_program(False)
    spec = fuzz.VmapSpec((1,), (-1,), [[prog.nodes[0], dataclasses.replace(prog.nodes[0], seed=12),
                                        dataclasses.replace(prog.nodes[0], seed=13)]], False)
    fuzz.check_vmap(prog, spec)
    nxf, jx = fuzz.OPS["exp"]
    monkeypatch.setitem(fuzz.OPS, "exp", (nxf, lambda J, ts, out, x: jx(J, ts, out, x) + 1))
    fuzz.check_vmap(prog, spec, with_jax=False)  # nxpy's paths do not read the twin
    with pytest.raises(fuzz.Mismatch,
                       match=r"vmap: result 0: the examples run alone .* vs jax.vmap"):
        fuzz.check_vmap(prog, spec)


def test_the_examples_stay_in_the_programs_domain():
    seen = set()
    for k in range(80):
        prog = fuzz.generate(SEED, k)
        spec = fuzz.vmap_spec(prog)
        ids = [i for i, n in enumerate(prog.nodes) if isinstance(n, Leaf)]
        assert len(spec.in_axes) == len(ids) and any(a is not None for a in spec.in_axes)
        assert all(0 <= a % (len(n.shape) + 1) <= len(n.shape)
                   for a, n in zip(spec.in_axes, prog.leaves()) if a is not None)
        for i, a, exs in zip(ids, spec.in_axes, spec.examples):
            leaf = prog.nodes[i]
            assert len(exs) == fuzz.VMAP_SIZE and exs[0] == leaf
            if a is None:
                assert exs == [leaf] * fuzz.VMAP_SIZE
                continue
            seen.add("none" if a == 0 else "other")
            for ex in exs:
                assert (ex.shape, ex.type, ex.names) == (leaf.shape, leaf.type, leaf.names)
                if leaf.data is not None and np.ndim(leaf.data):
                    # indices: the same ones, moved (in range; indexed_put rows stay distinct)
                    def rows(d):
                        return sorted(map(tuple, np.asarray(d).reshape(len(d), -1).tolist()))
                    assert rows(ex.data) == rows(leaf.data)
            if leaf.data is None and len(exs) == len({x.seed for x in exs}):
                seen.add("fresh")
        for j in range(1, fuzz.VMAP_SIZE):
            assert fuzz.checks._rules_hold(prog, [exs[j] for exs in spec.examples])
    assert seen == {"none", "other", "fresh"}


def test_an_example_that_breaks_a_value_rule_is_drawn_again():
    # bitcast of a float needs an operand without NaN: inputs drawn with NaN/inf/-0.0 are
    # kept only when they have no NaN
    seed = next(s for s in range(100)
                if not np.isnan(Leaf((4,), "f32", special=True, seed=s).array()).any())
    prog = _fixed([Leaf((4,), "f32", special=True, seed=seed),
                   Step("bitcast", (0,), {"type": "s32"})], (1,))
    nan_draws = 0
    for index in range(20):
        prog.index = index
        spec = fuzz.vmap_spec(prog)
        for ex in spec.examples[0]:
            assert not np.isnan(ex.array()).any()
        nan_draws += sum(np.isnan(Leaf((4,), "f32", special=True, seed=s).array()).any()
                         for s in np.random.default_rng([0, index, 2]).integers(2**31, size=8))
    assert nan_draws  # fresh draws do have NaN: the rule was checked, not vacuous


def test_run_many_batches_every_nth_program(monkeypatch):
    seen = []
    monkeypatch.setattr(fuzz.run, "check_vmap", lambda prog, **kw: seen.append(prog.index))
    assert fuzz.run_many(SEED, 5, start=0, vmap_every=2) == []
    assert seen == [0, 2, 4]


def test_the_command_line_shows_and_checks_the_batch(capsys):
    assert fuzz.main(["--seed", str(SEED), "--index", "0", "--vmap", "--show"]) == 0
    out = capsys.readouterr().out
    spec = fuzz.vmap_spec(fuzz.generate(SEED, 0))
    assert (f"vmap over 3 examples: in_axes={spec.in_axes!r}, "
            f"out_axes={spec.vmap_out_axes()!r}") in out
    assert out.rstrip().endswith("ok")


# ----------------------------------------------------------------------------------------
# jvp: forward mode against jax.jvp on the same programs
# ----------------------------------------------------------------------------------------
JVP_EVERY = int(os.environ.get("NXPY_FUZZ_JVP_EVERY", "5"))


@pytest.mark.parametrize("k", [k for k in range(N) if k % JVP_EVERY == 0 and k % 10 != 9],
                         ids=lambda k: f"seed{SEED}-{k}")
def test_fuzz_jvp_slice(k):
    try:
        fuzz.check_jvp(fuzz.generate(SEED, k))
    except fuzz.Mismatch as err:
        pytest.fail(f"fuzz seed {SEED}, program {k}: {err}", pytrace=False)


@contextlib.contextmanager
def _wrong_exp_jvp():
    """exp's JVP rule off by a factor of 2, for as long as the block runs."""
    saved = JVP_RULES["exp"]
    JVP_RULES["exp"] = lambda ctx, e, xs, ts, out: ts[0] * out * 2.0
    try:
        yield
    finally:
        JVP_RULES["exp"] = saved


def test_check_jvp_catches_a_wrong_rule():
    prog = Program(0, 0, [Leaf((3,), "f32", lo=-1, hi=1, seed=5), Step("exp", (0,), {})],
                   ["f32", "f32"], (1,))
    with _wrong_exp_jvp(), pytest.raises(fuzz.Mismatch,
                                         match="jvp: evaluator tangent of result 0"):
        fuzz.check_jvp(prog)
    assert fuzz.check_jvp(prog) == "jax"


def test_check_jvp_against_grad_where_jax_cannot_differentiate():
    # jax.jvp has no rule for select_and_scatter: the tangents are checked by the
    # transposition identity against nxpy's grad, which catches a wrong rule too
    prog = Program(0, 0, [Leaf((4,), "f32", lo=-1, hi=1, seed=5),
                          Leaf((2,), "f32", lo=-1, hi=1, seed=6),
                          Step("window_scatter_max", (0, 1),
                               {"init": 0, "window": [2], "strides": [2], "padding": "valid"}),
                          Step("exp", (2,), {})],
                   ["f32", "f32", "f32", "f32"], (3,))
    assert fuzz.check_jvp(prog) == "grad"
    with _wrong_exp_jvp(), pytest.raises(fuzz.Mismatch, match="by jvp but .* by grad"):
        fuzz.check_jvp(prog)


def test_fuzz_jvp_window_reduce_where_acc_wins():
    # window_reduce(max) whose initial value beats whole windows: their tangent is acc's
    fuzz.check_jvp(fuzz.generate(0, 150))
