"""Bad inputs, one test per kind of parameter: each is rejected with the exception class
NumPy or JAX would raise (or an nxpy class named in docs/guarantees.md) and a
message naming the argument, before anything reaches jaxlib. The values that are accepted
are checked against NumPy, so a check that rejects too much fails here too."""
import numpy as np
import pytest

import nxpy as nx
from nxpy import linalg, random
from nxpy.compilers.exla import LoweringError
from nxpy.defn import Compiler, jit, shard_jit, shard_map, psum, all_gather, grad
from nxpy.extend import register_lowering, register_op
from nxpy.stablehlo import LoadError, UnsupportedOpError, load


# ----------------------------------------------------------------------------------------
# Values entering nxpy: creation, full, Python scalars in ops
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, value, t", [
    (lambda: nx.tensor([300], type="u8"), 300, "u8"),
    (lambda: nx.tensor([-1], type="u32"), -1, "u32"),
    (lambda: nx.tensor([200], type="s8"), 200, "s8"),
    (lambda: nx.tensor([2**64], type="u64"), 2**64, "u64"),
    (lambda: nx.tensor([2**63], type="s64"), 2**63, "s64"),
    (lambda: nx.tensor(np.array([300]), type="u8"), 300, "u8"),  # NumPy values too
    (lambda: nx.tensor(np.array([-1.0]), type="u8"), -1.0, "u8"),
    (lambda: nx.tensor([70000], type="f16"), 70000, "f16"),
    (lambda: nx.full((2,), 300, type="u8"), 300, "u8"),
    (lambda: nx.full((2,), -1, type="u16"), -1, "u16"),
    (lambda: nx.as_type(300, "u8"), 300, "u8"),  # a number is built in the type directly
])
def test_out_of_range_numbers_on_creation(make, value, t):
    with pytest.raises(OverflowError, match=rf"{value}.* out of range for {t}|"
                                            rf"{value} is too large for {t}"):
        make()


def test_in_range_numbers_on_creation_match_numpy():
    for data, t in [([0, 255], "u8"), ([-128, 127], "s8"), ([2**64 - 1], "u64"),
                    ([-2**63, 2**63 - 1], "s64"), ([65504], "f16"), ([1.9, -1.9], "s32"),
                    ([True, 2], "u8"), ([3 + 0j], "f32")]:
        src = np.array(data)
        want = (src.real if src.dtype.kind == "c" else src).astype(nx.types.parse(t).dtype)
        np.testing.assert_array_equal(nx.tensor(data, type=t).to_numpy(), want)
    assert nx.full((2,), 255, type="u8").tolist() == [255, 255]
    # converting a tensor keeps XLA's semantics (wrapping, saturating): only values
    # entering nxpy are checked
    assert nx.as_type(nx.tensor([300]), "u8").tolist() == [44]
    assert (nx.tensor([255], type="u8") + nx.tensor([1], type="u8")).tolist() == [0]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_infinity_into_integer_types(value):
    for make in (lambda: nx.tensor([1.0, value], type="s32"),
                 lambda: nx.tensor(np.array([value]), type="u8"),
                 lambda: nx.full((2,), value, type="s64")):
        with pytest.raises(ValueError, match=rf"{value} cannot be converted to the integer type"):
            make()


def test_complex_into_real_types():
    with pytest.raises(TypeError, match=r"tensor: complex number \(3\+1j\) cannot be held by "
                                        r"the real type s32"):
        nx.tensor([3 + 1j], type="s32")


@pytest.mark.parametrize("op, x, value, match", [
    (nx.add, nx.tensor([1], type="s64"), 2**63,
     r"add: right operand: integer 9223372036854775808 is out of range for s64"),
    (nx.add, nx.tensor([1], type="u64"), 2**64,
     r"add: right operand: integer 18446744073709551616 is out of range for u64"),
    (nx.subtract, nx.tensor([1], type="s32"), -2**70,
     r"subtract: right operand: integer -1180591620717411303424"),
    (nx.multiply, nx.tensor([1.0]), 2**200,
     r"multiply: right operand: integer 160693804425\.\.\.\(61 digits\) is too large for f32"),
    (lambda a, b: nx.max(b, a), nx.tensor([1], type="u64"), 2**64, r"max: left operand"),
    (lambda a, b: nx.select(nx.tensor(True), a, b), nx.tensor([1], type="s64"), 2**64,
     r"select: on_false"),
    (lambda a, b: nx.clip(a, 0, b), nx.tensor([1], type="s64"), 2**64, r"clip: max"),
    (lambda a, b: nx.pad(a, b, [(1, 1, 0)]), nx.tensor([1], type="u8"), 300,
     r"pad: pad_value: integer 300 is out of range for u8"),
])
def test_python_scalars_no_type_can_hold(op, x, value, match):
    # scalars widen the tensor's type as Nx's merge_number does (u8 + 300 is u16); a
    # number beyond every type of that promotion is an OverflowError (as in JAX)
    with pytest.raises(OverflowError, match=match):
        op(x, value)
    with pytest.raises(OverflowError, match=match):
        jit(lambda t: op(t, value))(x)


def test_python_scalars_widen_as_nx_does():
    r = nx.add(nx.tensor([1], type="u8"), 300)
    assert (str(r.type), r.tolist()) == ("u16", [301])
    r = nx.add(nx.tensor([1], type="s64"), 2**63 - 1)
    assert (str(r.type), r.tolist()) == ("s64", [np.iinfo(np.int64).min])  # wraps in the op


# ----------------------------------------------------------------------------------------
# Type names
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, why", [
    ("u4", "4-bit unsigned integer"), ("u2", "2-bit unsigned integer"),
    ("s4", "4-bit signed integer"), ("s2", "2-bit signed integer"), ("f8", "8-bit float"),
    (("u", 4), "4-bit unsigned integer"), (("f", 8), "8-bit float"),
])
def test_nx_types_nxpy_lacks_are_never_reinterpreted(name, why):
    with pytest.raises(TypeError,
                       match=rf"invalid type .*\(Nx's {why}, which nxpy does not support\)"):
        nx.tensor([1], type=name)
    with pytest.raises(TypeError, match="invalid type"):
        nx.iota((2,), type=name)


@pytest.mark.parametrize("name", ["i4", "c8", "f", "b", "int", "float", "?", "x32", ("s", "8"), 32])
def test_numpy_codes_and_other_names_are_rejected(name):
    with pytest.raises(TypeError, match=r"invalid type .*expected one of s8, .*pred, bool"):
        nx.tensor([1], type=name)


def test_numpy_names_and_dtypes_are_accepted():
    for name, t in [("float32", "f32"), ("int8", "s8"), ("uint64", "u64"), ("bool", "pred"),
                    (np.float16, "f16"), (np.dtype("complex128"), "c128"), (("bf", 16), "bf16")]:
        assert str(nx.tensor([1], type=name).type) == t


@pytest.mark.parametrize("op", [nx.argmax, nx.argmin])
def test_arg_reductions_take_integer_index_types(op):
    with pytest.raises(TypeError, match=rf"{op.__name__}: expected type \(of the indices\) to be "
                                        r"an integer type, got f32"):
        op(nx.tensor([1, 3, 2]), type="f32")
    assert str(op(nx.tensor([1, 3, 2]), type="u8").type) == "u8"


# ----------------------------------------------------------------------------------------
# Integers: shapes, sizes, axes, counts (one shared check)
# ----------------------------------------------------------------------------------------
BAD_INTEGERS = [2.5, 2.0, True, np.float32(2), np.array(2.0), np.array([2]), "2", None]


@pytest.mark.parametrize("bad", BAD_INTEGERS, ids=repr)
@pytest.mark.parametrize("call, arg", [
    (lambda d: nx.iota((d, 2)), "iota: expected shape"),
    (lambda d: nx.eye((d, 2)), "eye: expected shape"),
    (lambda d: nx.full((2, d), 1), "full: expected shape"),
    (lambda d: nx.broadcast(nx.tensor([1.0]), (2, d)), "broadcast: expected shape"),
    (lambda d: nx.reshape(nx.iota((4,)), (d, 2)), "reshape: expected shape"),
    (lambda d: nx.template((d,), "f32"), "template: expected shape"),
    (lambda d: nx.Mesh("m", (d, 1)), "expected mesh shape"),
    (lambda d: random.uniform(random.key(0), shape=(d,)), "uniform_split: expected shape"),
    (lambda d: nx.slice(nx.iota((4,)), [0], [d]), "slice: expected lengths"),
    (lambda d: nx.slice(nx.iota((4,)), [0], [2], strides=[d]), "slice: expected strides"),
    (lambda d: nx.pad(nx.iota((4,)), 0, [(d, 0, 0)]), "pad: expected padding_config entries"),
    (lambda d: nx.window_sum(nx.iota((4,)), (d,)), "window_sum: expected window_dimensions"),
    (lambda d: nx.top_k(nx.iota((4,)), k=d), "top_k: expected k"),
    (lambda d: nx.nn.one_hot(nx.tensor([1]), d), "one_hot: expected num_classes"),
])
def test_shapes_and_sizes_must_be_integers(call, arg, bad):
    with pytest.raises(TypeError, match=rf"{arg} to be .*integer"):
        call(bad)


@pytest.mark.parametrize("bad", BAD_INTEGERS[:-1], ids=repr)
@pytest.mark.parametrize("call", [
    lambda a: nx.sum(nx.iota((2, 2)), axes=[a]),
    lambda a: nx.argmax(nx.iota((2, 2)), axis=a),
    lambda a: nx.new_axis(nx.iota((2,)), a),
    lambda a: nx.concatenate([nx.iota((2,)), nx.iota((2,))], axis=a),
    lambda a: nx.iota((2, 2), axis=a),
])
def test_axes_must_be_integers_or_names(call, bad):
    with pytest.raises((TypeError, ValueError), match="axis"):
        call(bad)


def test_numpy_integers_are_integers():
    two = [np.int64(2), np.uint8(2), np.array(2), np.array(2, np.int16)]
    for d in two:
        assert nx.iota((d, 3)).shape == (2, 3)
        assert nx.broadcast(1, (d,)).shape == (2,)
        assert nx.Mesh("m", (d,)).shape == (2,)
        assert nx.sum(nx.iota((3, 3)), axes=[d - 1]).shape == (3,)
        assert nx.top_k(nx.iota((4,)), k=d)[0].tolist() == [3, 2]
    assert nx.iota(np.int64(3)).shape == (3,)


def test_negative_sizes():
    with pytest.raises(ValueError, match=r"iota: expected shape to be a tuple of non-negative "
                                         r"integers, got \(2, -1\)"):
        nx.iota((2, -1))
    with pytest.raises(ValueError, match="mesh shape must be a non-empty tuple of positive"):
        nx.Mesh("m", (0,))


# ----------------------------------------------------------------------------------------
# Names
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, arg", [
    (lambda n: nx.tensor([1, 2], names=[n]), "tensor: expected names entries"),
    (lambda n: nx.iota((2,), names=[n]), "iota: expected names entries"),
    (lambda n: nx.reshape(nx.iota((2,)), (2,), names=[n]), "reshape: expected names entries"),
    (lambda n: nx.broadcast(1, (2,), names=[n]), "broadcast: expected names entries"),
    (lambda n: nx.rename(nx.iota((2,)), [n]), "rename: expected names entries"),
    (lambda n: nx.new_axis(nx.iota((2,)), 0, n), "new_axis: expected name"),
    (lambda n: nx.stack([nx.iota((2,))], name=n), "stack: expected name"),
    (lambda n: random.uniform(random.key(0), shape=(2,), names=[n]),
     "uniform_split: expected names entries"),
])
@pytest.mark.parametrize("bad", [1, 1.5, ("a",), b"a"], ids=repr)
def test_dim_names_are_strings_or_none(call, arg, bad):
    with pytest.raises(TypeError, match=rf"{arg} to be a string or None"):
        call(bad)


def test_names_count_and_conflicts():
    with pytest.raises(TypeError, match="tensor: expected names to be a list of one name"):
        nx.tensor([1, 2], names="ab")
    with pytest.raises(ValueError, match=r"iota: expected names to have one name .* shape \(2,\)"):
        nx.iota((2,), names=["a", "b"])
    with pytest.raises(ValueError, match="add: cannot merge names 'a' and 'b'"):
        nx.add(nx.iota((2,), names=["a"]), nx.iota((2,), names=["b"]))
    with pytest.raises(ValueError, match="select: cannot merge names"):
        nx.select(nx.tensor(1), nx.iota((2,), names=["a"]), nx.iota((2,), names=["b"]))


# ----------------------------------------------------------------------------------------
# Arrays of unsupported dtypes
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("arr", [np.array([1, "a"], dtype=object), np.array([1, 2], dtype=object),
                                 np.array(["a"]),
                                 np.array([1], np.float128 if hasattr(np, "float128") else object)])
def test_unsupported_numpy_dtypes(arr):
    for make in (nx.tensor, nx.from_numpy, nx.to_tensor):
        with pytest.raises(TypeError, match=rf"unsupported NumPy dtype {arr.dtype}"):
            make(arr)
    with pytest.raises(TypeError,
                       match=rf"argument 0 \(x\): .*unsupported NumPy dtype {arr.dtype}"):
        jit(lambda x: x)(arr)


# ----------------------------------------------------------------------------------------
# Inside a defn: reading values
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fun", [lambda x: x if x > 0 else -x, lambda x: x.to_numpy(),
                                 lambda x: int(x), lambda x: np.asarray(x)])
def test_host_only_operations_raise_a_type_error(fun):
    with pytest.raises(nx.HostOnlyError, match="is a host-only operation") as err:
        jit(fun)(nx.tensor(1))
    assert isinstance(err.value, TypeError)


# ----------------------------------------------------------------------------------------
# Meshes, sharding specs, collectives
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("devices, exc, match", [
    ([-1, 0, 1, 2], ValueError, r"mesh 'm': devices \[-1, 0, 1, 2\] include -1: device positions"),
    ([0, 1, 2, 10**6], ValueError, r"include 1000000, which is not a device position"),
    ([0, 0, 1, 2], ValueError, r"needs 4 distinct devices, got \[0, 0, 1, 2\]"),
    ([0, 1, 2.0, 3], TypeError,
     r"mesh 'm': expected devices to be a sequence of integers, .*2\.0 \(float\)"),
    ([0, 1, 2], ValueError, r"needs 4 distinct devices"),
])
def test_mesh_devices(devices, exc, match):
    with pytest.raises(exc, match=match):
        nx.Mesh("m", (2, 2), devices=devices)
    assert nx.Mesh("m", (2, 2), devices=[np.int64(3), 2, 1, 0]).devices == (3, 2, 1, 0)


def test_mesh_axis_names():
    with pytest.raises(ValueError, match="axis_names must be 2 distinct non-empty strings"):
        nx.Mesh("m", (2, 2), axis_names=("x", 1))
    with pytest.raises(ValueError, match="axis_names must be 2 distinct non-empty strings"):
        nx.Mesh("m", (2, 2), axis_names=("x", "x"))


def test_sharding_specs_name_the_spec_and_the_argument():
    mesh = nx.Mesh("m", (2,), axis_names=("x",))
    f = shard_jit(lambda a: a + 1, mesh, input_shardings=[{5: ["x"]}])
    with pytest.raises(ValueError, match=r"input sharding 0 \{5: \['x'\]\}: tensor dim "
                                         r"5 is not a dim of a tensor of shape \(1, 2\)"):
        f([[nx.iota((1, 2))], [nx.iota((1, 2))]])
    g = shard_jit(lambda a: a + 1, mesh, input_shardings=[{1.0: ["x"]}])
    with pytest.raises(TypeError, match=r"input sharding 0 .*tensor dim 1\.0"):
        g([[nx.iota((1, 2))], [nx.iota((1, 2))]])


@pytest.mark.parametrize("spec", [("x", None, None), (None, None, None)])
def test_shard_map_spec_longer_than_the_rank(spec):
    mesh = nx.Mesh("m", (2,), axis_names=("x",))
    f = shard_map(lambda a: a, mesh, in_specs=spec, out_specs=("x", None))
    with pytest.raises(ValueError, match=r"shard_map: in_specs of argument 0 .* has 3 "
                                         r"entries but the tensor has rank 2"):
        f(nx.iota((2, 2)))
    h = shard_map(lambda a: a, mesh, in_specs=("x", None), out_specs=spec)
    with pytest.raises(ValueError, match=r"shard_map: out_specs of .* has 3 entries"):
        h(nx.iota((2, 2)))


@pytest.mark.parametrize("call, exc, match", [
    (lambda a: psum(a, "z"), ValueError, "axis 'z' is not an axis of mesh"),
    (lambda a: psum(a, 1.0), TypeError, r"all_reduce: expected the mesh axes to be a name, an "
                                        r"index or a tuple of them, got 1\.0"),
    (lambda a: psum(a, ["x", 0.0]), TypeError, "mesh axis must be an index or a name, got 0.0"),
    (lambda a: psum(a, ["x", "x"]), ValueError, r"axes \['x', 'x'\] name a mesh axis twice"),
    (lambda a: psum(a, "x", axis_index_groups=[[0, 0]]), ValueError, "axis_index_groups"),
    (lambda a: all_gather(a, all_gather_dim=0.5, axes=["x"]), TypeError, "all_gather_dim"),
])
def test_collective_axes_and_groups(call, exc, match):
    mesh = nx.Mesh("m", (2,), axis_names=("x",))
    f = shard_map(call, mesh, in_specs=("x",), out_specs=(None,))
    with pytest.raises(exc, match=match):
        f(nx.iota((2,)))


# ----------------------------------------------------------------------------------------
# defn arguments
# ----------------------------------------------------------------------------------------
def test_defn_integer_options():
    with pytest.raises(TypeError, match="donate_argnums must be an int or a sequence of ints"):
        jit(lambda x: x, donate_argnums=0.0)
    with pytest.raises(TypeError, match="grad: expected argnums to be an integer"):
        grad(lambda x: nx.sum(x), argnums=0.0)(nx.tensor([1.0]))
    with pytest.raises(ValueError,
                       match="while_loop: max_iterations must be a non-negative integer"):
        jit(lambda x: nx.while_loop(lambda s: s < 3, lambda s: s + 1, x,
                                    max_iterations=2.0))(nx.tensor(0))
    with pytest.raises(ValueError, match=r"option device_id must be an integer"):
        jit(lambda x: x, compiler="exla", device_id=0.0)(nx.tensor(1))
    assert grad(lambda x: nx.sum(x * x), argnums=np.int64(0))(nx.tensor([3.0])).tolist() == [6.0]


def test_linalg_and_random_arguments():
    with pytest.raises(TypeError, match="expected shape to be a tuple of non-negative integers"):
        random.normal(random.key(0), shape=(2.0,))
    with pytest.raises(TypeError, match="invalid type 'f8'"):
        random.uniform(random.key(0), shape=(2,), type="f8")
    m = nx.tensor([[2.0, 1.0], [1.0, 3.0]])
    with pytest.raises(ValueError, match="qr: invalid :mode received"):
        linalg.qr(m, mode="bad")
    with pytest.raises(TypeError, match="matrix_power: expected power to be an integer, got 2.0"):
        linalg.matrix_power(m, 2.0)
    with pytest.raises(ValueError,
                       match="svd: expected max_iter to be a positive integer, got 1.5"):
        linalg.svd(m, max_iter=1.5)
    with pytest.raises(TypeError, match="pinv: expected eps to be a number"):
        linalg.pinv(m, eps="small")
    np.testing.assert_allclose(linalg.matrix_power(m, np.int64(2)).to_numpy(),
                               np.linalg.matrix_power(m.to_numpy(), 2), rtol=1e-6)


# ----------------------------------------------------------------------------------------
# Plugins and extensions: errors name the plugin, the op
# ----------------------------------------------------------------------------------------
class _Stringly(Compiler):
    name = "test_stringly"
    options = frozenset()

    def compile(self, graph, opts):
        return "not a function"


def test_a_compile_result_that_is_not_callable_names_the_compiler():
    nx.register_compiler("test_stringly", _Stringly())
    try:
        with pytest.raises(nx.PluginError, match=r"compiler 'test_stringly' \(test_validation\."
                                                 r"_Stringly\): compile\(\) returned str"):
            jit(lambda x: x + 1, compiler="test_stringly")(nx.tensor(1))
    finally:
        from nxpy.defn.compiler import COMPILERS
        COMPILERS.unregister("test_stringly")


def test_a_lowering_that_emits_the_wrong_type_names_the_op():
    op = register_op("test_badly_lowered", lambda x: (x.shape, x.type))

    @register_lowering("test_badly_lowered")
    def _(ctx, e, x):
        return ctx.convert(x, nx.types.parse("f64"))  # the op says f32

    with pytest.raises(LoweringError, match=r"the EXLA lowering of op 'test_badly_lowered' "
                                            r"\(test_validation\..*\) produced tensor<3xf64> but "
                                            r"the op's inferred result is tensor<3xf32>"):
        jit(op, compiler="exla")(nx.iota((3,), type="f32"))


# ----------------------------------------------------------------------------------------
# The importer: a module nxpy cannot run fails at load
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, exc, match", [
    ("func.func @main(%a: tensor<2xq7>) -> tensor<2xq7> {\n  return %a : tensor<2xq7>\n}",
     LoadError, r"@main: type tensor<2xq7>: element type q7 has no nxpy equivalent"),
    ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
     "  %0 = stablehlo.convert %a : (tensor<2xf32>) -> tensor<2xq7>\n"
     "  %1 = stablehlo.convert %0 : (tensor<2xq7>) -> tensor<2xf32>\n"
     "  return %1 : tensor<2xf32>\n}",
     LoadError, r"stablehlo.convert at line 2, column 3: type tensor<2xq7>"),
    ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
     "  %0 = stablehlo.frobnicate %a : (tensor<2xf32>) -> tensor<2xf32>\n"
     "  return %0 : tensor<2xf32>\n}",
     UnsupportedOpError, r"stablehlo.frobnicate at line 2, column 3: nxpy has no equivalent"),
    ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf64> {\n"
     "  %0 = stablehlo.add %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf64>\n"
     "  return %0 : tensor<2xf64>\n}",
     LoadError, r"stablehlo.add at line 2, column 3: the module declares result 0 as "
                r"tensor<2xf64>, but stablehlo.add of \(tensor<2xf32>, tensor<2xf32>\) gives "
                r"f32\[2\]: the module's types are inconsistent"),
])
def test_modules_nxpy_cannot_run_fail_at_load(text, exc, match):
    with pytest.raises(exc, match=match) as err:
        load(text)
    assert "internal error" not in str(err.value)


def test_program_arguments():
    prog = load("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                "  return %a : tensor<2xf32>\n}")
    with pytest.raises(ValueError, match=r"argument 0 \(%a\) must be f32\[2\]"):
        prog(nx.tensor([1, 2]))


# ----------------------------------------------------------------------------------------
# nxpy.distributed: checked before the runtime is touched
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, exc, match", [
    ({"num_processes": 2.0, "process_id": 0}, TypeError,
     "initialize: expected num_processes to be an integer, got 2.0"),
    ({"num_processes": True, "process_id": 0}, TypeError,
     "expected num_processes to be an integer, got True"),
    ({"num_processes": 0, "process_id": 0}, ValueError,
     "expected num_processes to be an integer >= 1"),
    ({"num_processes": 2, "process_id": 2}, ValueError,
     r"process_id must be below num_processes \(2\), got 2"),
    ({"num_processes": 2, "process_id": -1}, ValueError,
     "expected process_id to be an integer >= 0"),
    ({"num_processes": 2, "process_id": 0, "local_device_count": 1.5}, TypeError,
     "local_device_count"),
    ({"num_processes": 2, "process_id": 0, "timeout": -1}, ValueError,
     "timeout must be a positive number"),
    ({"num_processes": 2, "process_id": 0, "heartbeat_timeout": "10"}, ValueError,
     "heartbeat_timeout must be"),
])
def test_distributed_initialize_arguments(kw, exc, match):
    from nxpy import distributed
    with pytest.raises(exc, match=match):
        distributed.initialize("127.0.0.1:1", **kw)
    assert not distributed.is_initialized()


@pytest.mark.parametrize("call, match", [
    (lambda: jit(3), "jit: expected fun to be a callable, got 3"),
    (lambda: nx.defn.compile(3, nx.template((2,), "f32")),
     "compile: expected fun to be a callable"),
    (lambda: shard_jit(3, nx.Mesh("m", (2,)), input_shardings=[{}]),
     "shard_jit: expected fun to be a callable"),
    (lambda: shard_map(3, nx.Mesh("m", (2,)), in_specs=None, out_specs=None),
     "shard_map: expected fun to be a callable"),
    (lambda: nx.while_loop(1, lambda s: s, nx.tensor(0)),
     "while_loop: expected cond_fun to be a callable"),
    (lambda: nx.fori_loop(0, 3, None, nx.tensor(0)),
     "fori_loop: expected body_fun to be a callable, got None"),
    (lambda: shard_jit(lambda x: x, "m", input_shardings=[{}]),
     "shard_jit: expected mesh to be an nx.Mesh"),
])
def test_functions_and_meshes_are_checked_when_given(call, match):
    with pytest.raises(TypeError, match=match):
        call()
