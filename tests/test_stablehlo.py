"""nxpy.stablehlo: parsing StableHLO text, loading it as nxpy programs, the round trip of
nxpy's own modules, JAX's modules run under nxpy, structural helpers and the CLI."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import nxpy as nx
from nxpy.compilers.exla import to_mlir
from nxpy.defn import (all_gather, all_slice, all_to_all, axis_index, collective_broadcast,
                       debug_expr, jit, pmax, pmean, pmin, ppermute, psum, psum_scatter,
                       reduce_scatter, shard_jit, shard_map, shift)
from nxpy.defn.sharding import specs as SH
from nxpy.layout import read_sharding
from nxpy.stablehlo import LoadError, StableHLOSyntaxError, UnsupportedOpError, load, parse
from nxpy.stablehlo import roundtrip
from nxpy.stablehlo.__main__ import main as cli_main
from nxpy.stablehlo.syntax import (CallSiteLoc, DenseElements, EnumAttr, FileLoc, FusedLoc,
                                   LocRef, NameLoc, Sharding, TensorType)

from helpers import COMPILERS, close

import jax  # after nxpy started XLA (conftest), so both share the 8 host devices
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh as JMesh, NamedSharding, PartitionSpec as P


def fn(body, args="%x: tensor<2xf32>", results="tensor<2xf32>"):
    """A module with one function ``@main(args) -> results`` around ``body``."""
    return f"func.func @main({args}) -> {results} {{\n{body}\n}}"


def only_op(text):
    ops = [o for o in parse(text).main.body.ops if o.name != "func.return"]
    assert len(ops) == 1
    return ops[0]


def canon(op):
    """What the generic and the custom form of an op must agree on."""
    return (op.name, [str(u) for u in op.operands], op.attrs, [str(t) for t in op.operand_types],
            [str(t) for t in op.result_types], len(op.regions))


# ----------------------------------------------------------------------------------------
# Parsing: generic and custom forms give the same op
# ----------------------------------------------------------------------------------------
T23, T32 = "tensor<2x3xf32>", "tensor<3x2xf32>"
SAME_OP = [
    ("add", '%0 = "stablehlo.add"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>',
     "%0 = stablehlo.add %x, %x : tensor<2xf32>", "%x: tensor<2xf32>"),
    ("broadcast_in_dim",
     '%0 = "stablehlo.broadcast_in_dim"(%x) <{broadcast_dimensions = array<i64: 1>}> : '
     '(tensor<3xf32>) -> tensor<2x3xf32>',
     "%0 = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>",
     "%x: tensor<3xf32>"),
    ("compare",
     '%0 = "stablehlo.compare"(%x, %x) <{comparison_direction = #stablehlo<comparison_direction '
     'LT>, compare_type = #stablehlo<comparison_type FLOAT>}> : (tensor<2xf32>, tensor<2xf32>) '
     '-> tensor<2xi1>',
     "%0 = stablehlo.compare  LT, %x, %x,  FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>",
     "%x: tensor<2xf32>"),
    ("constant", '%0 = "stablehlo.constant"() <{value = dense<"0x0000803F00000040"> : '
                 'tensor<2xf32>}> : () -> tensor<2xf32>',
     "%0 = stablehlo.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>", ""),
    ("iota", '%0 = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<2x3xi32>',
     "%0 = stablehlo.iota dim = 1 : tensor<2x3xi32>", ""),
    ("transpose",
     f'%0 = "stablehlo.transpose"(%x) <{{permutation = array<i64: 1, 0>}}> : ({T23}) -> {T32}',
     f"%0 = stablehlo.transpose %x, dims = [1, 0] : ({T23}) -> {T32}", f"%x: {T23}"),
    ("reverse", f'%0 = "stablehlo.reverse"(%x) <{{dimensions = array<i64: 0>}}> : ({T23}) -> {T23}',
     f"%0 = stablehlo.reverse %x, dims = [0] : {T23}", f"%x: {T23}"),
    ("slice", '%0 = "stablehlo.slice"(%x) <{start_indices = array<i64: 0, 1>, limit_indices = '
              f'array<i64: 2, 3>, strides = array<i64: 1, 2>}}> : ({T23}) -> tensor<2x1xf32>',
     f"%0 = stablehlo.slice %x [0:2, 1:3:2] : ({T23}) -> tensor<2x1xf32>", f"%x: {T23}"),
    ("dynamic_slice",
     '%0 = "stablehlo.dynamic_slice"(%x, %i, %i) <{slice_sizes = array<i64: 1, 2>}> : '
     f'({T23}, tensor<i32>, tensor<i32>) -> tensor<1x2xf32>',
     f"%0 = stablehlo.dynamic_slice %x, %i, %i, sizes = [1, 2] : ({T23}, tensor<i32>, "
     "tensor<i32>) -> tensor<1x2xf32>", f"%x: {T23}, %i: tensor<i32>"),
    ("concatenate",
     f'%0 = "stablehlo.concatenate"(%x, %x) <{{dimension = 1 : i64}}> : ({T23}, {T23}) -> '
     "tensor<2x6xf32>",
     f"%0 = stablehlo.concatenate %x, %x, dim = 1 : ({T23}, {T23}) -> tensor<2x6xf32>",
     f"%x: {T23}"),
    ("pad", '%0 = "stablehlo.pad"(%x, %v) <{edge_padding_high = array<i64: 2, 1>, '
            'edge_padding_low = array<i64: 1, 0>, interior_padding = array<i64: 0, 0>}> : '
            f'({T23}, tensor<f32>) -> tensor<5x4xf32>',
     "%0 = stablehlo.pad %x, %v, low = [1, 0], high = [2, 1], interior = [0, 0] : "
     f"({T23}, tensor<f32>) -> tensor<5x4xf32>", f"%x: {T23}, %v: tensor<f32>"),
    ("dot_general",
     '%0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<'
     'lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions '
     '= [2], rhs_contracting_dimensions = [1]>}> : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> '
     'tensor<2x3x5xf32>',
     "%0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x "
     "[1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>",
     "%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>"),
    ("select", '%0 = "stablehlo.select"(%p, %x, %x) : (tensor<2xi1>, tensor<2xf32>, '
               'tensor<2xf32>) -> tensor<2xf32>',
     "%0 = stablehlo.select %p, %x, %x : tensor<2xi1>, tensor<2xf32>",
     "%p: tensor<2xi1>, %x: tensor<2xf32>"),
    ("convert", '%0 = "stablehlo.convert"(%x) : (tensor<2xf32>) -> tensor<2xi32>',
     "%0 = stablehlo.convert %x : (tensor<2xf32>) -> tensor<2xi32>", "%x: tensor<2xf32>"),
    ("chlo", '%0 = "chlo.sinh"(%x) : (tensor<2xf32>) -> tensor<2xf32>',
     "%0 = chlo.sinh %x : tensor<2xf32> -> tensor<2xf32>", "%x: tensor<2xf32>"),
    ("partition_id", '%0 = "stablehlo.partition_id"() : () -> tensor<ui32>',
     "%0 = stablehlo.partition_id : tensor<ui32>", ""),
]


@pytest.mark.parametrize("name,generic,custom,args", SAME_OP, ids=[c[0] for c in SAME_OP])
def test_generic_and_custom_forms_agree(name, generic, custom, args):
    g, c = only_op(fn(generic, args, "()")), only_op(fn(custom, args, "()"))
    assert (g.form, c.form) == ("generic", "custom")
    assert canon(g) == canon(c)


def test_reduce_forms_agree():
    args = "%x: tensor<2x3xf32>, %c: tensor<f32>"
    compact = ("%0 = stablehlo.reduce(%x init: %c) applies stablehlo.maximum across dimensions "
               "= [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>")
    region = ("%0 = stablehlo.reduce(%x init: %c) across dimensions = [1] : (tensor<2x3xf32>, "
              "tensor<f32>) -> tensor<2xf32>\n reducer(%a: tensor<f32>, %b: tensor<f32>) {\n"
              "  %m = stablehlo.maximum %a, %b : tensor<f32>\n"
              "  stablehlo.return %m : tensor<f32>\n }")
    generic = ('%0 = "stablehlo.reduce"(%x, %c) <{dimensions = array<i64: 1>}> ({\n'
               "^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
               '  %m = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n'
               '  "stablehlo.return"(%m) : (tensor<f32>) -> ()\n'
               "}) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>")
    ops = [only_op(fn(b, args, "()")) for b in (compact, region, generic)]
    assert canon(ops[0]) == canon(ops[1]) == canon(ops[2])
    for o in ops:
        body = o.regions[0]
        assert [str(a.type) for a in body.args] == ["tensor<f32>"] * 2
        assert [x.name for x in body.ops] == ["stablehlo.maximum", "stablehlo.return"]


def test_multi_operand_reduce_block_arguments():
    # the pretty form groups block arguments by operand: (lhs0, rhs0) (lhs1, rhs1)
    text = fn("%0:2 = stablehlo.reduce(%x init: %c), (%i init: %z) across dimensions = [0] : "
              "(tensor<3xf32>, tensor<3xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, "
              "tensor<i32>)\n reducer(%a: tensor<f32>, %b: tensor<f32>) (%j: tensor<i32>, "
              "%k: tensor<i32>)  {\n  stablehlo.return %a, %j : tensor<f32>, tensor<i32>\n }",
              "%x: tensor<3xf32>, %i: tensor<3xi32>, %c: tensor<f32>, %z: tensor<i32>", "()")
    op = only_op(text)
    assert [str(u) for u in op.operands] == ["%x", "%i", "%c", "%z"]
    assert op.results == ["%0#0", "%0#1"]
    assert [a.name for a in op.regions[0].args] == ["%a", "%j", "%b", "%k"]


def test_while_custom_form():
    text = fn("%0:2 = stablehlo.while(%i = %n, %v = %x) : tensor<i32>, tensor<2xf32>\n"
              " cond {\n  %c = stablehlo.constant dense<3> : tensor<i32>\n"
              "  %p = stablehlo.compare LT, %i, %c, SIGNED : (tensor<i32>, tensor<i32>) "
              "-> tensor<i1>\n"
              "  stablehlo.return %p : tensor<i1>\n } do {\n"
              "  %one = stablehlo.constant dense<1> : tensor<i32>\n"
              "  %j = stablehlo.add %i, %one : tensor<i32>\n"
              "  %w = stablehlo.add %v, %v : tensor<2xf32>\n"
              "  stablehlo.return %j, %w : tensor<i32>, tensor<2xf32>\n }\n"
              "return %0#1 : tensor<2xf32>", "%n: tensor<i32>, %x: tensor<2xf32>")
    op = parse(text).find("stablehlo.while")[0]
    assert [str(u) for u in op.operands] == ["%n", "%x"]
    assert [[a.name for a in r.args] for r in op.regions] == [["%i", "%v"]] * 2
    assert [str(t) for t in op.result_types] == ["tensor<i32>", "tensor<2xf32>"]
    prog = load(text)
    assert prog(nx.tensor(0), nx.tensor([1.0, 2.0])).tolist() == [8.0, 16.0]


# ----------------------------------------------------------------------------------------
# Parsing: attributes, types, meshes, shardings, locations
# ----------------------------------------------------------------------------------------
def test_attributes():
    op = only_op(fn('"test.op"() {i = 3 : i64, neg = -2, f = 1.5 : f32, e = 1.0e-3, t = true, '
                    'b = false, s = "a\\22b\\n", u, un = unit, arr = array<i64: 1, 2>, '
                    'empty = array<i64>, lst = [1, "x", [2]], d = {k = 1}, sym = @f, '
                    'cmp = #stablehlo<comparison_direction GE>, '
                    'ch = #stablehlo.channel_handle<handle = 3, type = 1>, '
                    'dot = #stablehlo.dot<lhs_contracting_dimensions = [1], '
                    'rhs_contracting_dimensions = [0]>, '
                    'g = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, ty = tensor<2xf32>} '
                    ': () -> ()', "", "()"))
    a, attrs = op.attrs, op.attributes
    assert a == {"i": 3, "neg": -2, "f": 1.5, "e": 0.001, "t": True, "b": False, "s": 'a"b\n',
                 "u": True, "un": True, "arr": [1, 2], "empty": [], "lst": [1, "x", [2]],
                 "d": {"k": 1}, "sym": "f", "cmp": "GE", "ch": {"handle": 3, "type": 1},
                 "dot": {"lhs_contracting_dimensions": [1], "rhs_contracting_dimensions": [0]},
                 "g": [[0, 2], [1, 3]], "ty": TensorType((2,), attrs["ty"].element)}
    assert str(attrs["i"].type) == "i64" and str(attrs["f"].type) == "f32"
    assert isinstance(attrs["cmp"], EnumAttr) and attrs["cmp"].kind == "comparison_direction"
    assert attrs["ch"]["handle"] == 3
    assert isinstance(attrs["g"], DenseElements) and attrs["g"] == [[0, 2], [1, 3]]


DENSE = [  # (literal, type, values)
    ('dense<"0x0000803F">', "tensor<2xf32>", [1.0, 1.0]),                 # hex splat
    ('dense<"0x0100000002000000">', "tensor<2xi32>", [1, 2]),             # hex data
    ("dense<0xFF800000>", "tensor<f32>", -np.inf),                        # unquoted bits
    ("dense<[0x7F800000, 1.0]>", "tensor<2xf32>", [np.inf, 1.0]),
    ("dense<1.500000e+00>", "tensor<2x2xf64>", [[1.5, 1.5], [1.5, 1.5]]),
    ("dense<[[1, 2], [3, 4]]>", "tensor<2x2xui8>", [[1, 2], [3, 4]]),
    ("dense<-1>", "tensor<ui8>", 255),                                    # wraps like MLIR
    ("dense<true>", "tensor<3xi1>", [True] * 3),
    ("dense<[true, false]>", "tensor<2xi1>", [True, False]),
    ("dense<(1.0, -2.0)>", "tensor<complex<f32>>", 1 - 2j),
    ("dense<[(1.0, 2.0), (3.0, 4.0)]>", "tensor<2xcomplex<f64>>", [1 + 2j, 3 + 4j]),
    ('dense<"0x000000000000F03F0000000000000040">', "tensor<complex<f64>>", 1 + 2j),
    ("dense<(0x3F800000, 0x7F800000)>", "tensor<complex<f32>>", complex(1, np.inf)),
    ("dense<> : tensor<0x2xi64>", None, []),
    ('dense<"0x003C">', "tensor<f16>", 1.0),               # raw data is little-endian
    ('dense<"0x803F">', "tensor<bf16>", 1.0),
]


@pytest.mark.parametrize("lit,ty,values", DENSE, ids=[str(i) for i in range(len(DENSE))])
def test_dense_elements(lit, ty, values):
    text = f'"test.op"() {{v = {lit}{" : " + ty if ty else ""}}} : () -> ()'
    v = only_op(fn(text, "", "()")).attributes["v"]
    assert isinstance(v, DenseElements)
    np.testing.assert_array_equal(v.array,
                                  np.asarray(values, dtype=v.array.dtype).reshape(v.array.shape))


ELEMENT_TYPES = {"i1": "pred", "i8": "s8", "i16": "s16", "i32": "s32", "i64": "s64",
                 "si8": "s8", "si32": "s32", "ui8": "u8", "ui16": "u16", "ui32": "u32",
                 "ui64": "u64", "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64",
                 "complex<f32>": "c64", "complex<f64>": "c128"}


@pytest.mark.parametrize("mlir,nxt", ELEMENT_TYPES.items())
def test_element_types(mlir, nxt):
    f = parse(fn("return %x : tensor<2x0x3x{0}>".format(mlir), f"%x: tensor<2x0x3x{mlir}>",
                 f"tensor<2x0x3x{mlir}>")).main
    t = f.args[0].type
    assert (t.shape, str(t.nx_type), str(t)) == ((2, 0, 3), nxt, f"tensor<2x0x3x{mlir}>")


def test_unsupported_element_type_is_named():
    # at load, not at the first call (issue 17)
    with pytest.raises(LoadError, match="@main: type tensor<2xf8E4M3FN>: element type "
                                        "f8E4M3FN has no nxpy equivalent"):
        load(fn("return %x : tensor<2xf8E4M3FN>", "%x: tensor<2xf8E4M3FN>", "tensor<2xf8E4M3FN>"))


def test_meshes_and_shardings():
    m = parse('''module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>
      {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
  sdy.mesh @"odd name" = <["a"=4]>
  func.func public @main(
      %arg0: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}p1, {}],
                                                          replicated={"y"}>})
      -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"x"}, {}]> : tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
}''')
    mesh, odd = m.meshes
    assert (mesh.name, mesh.axes, mesh.device_ids, mesh.shape) == ("mesh", [("x", 2), ("y", 2)],
                                                                   [3, 2, 1, 0], (2, 2))
    assert (odd.name, odd.axis_names) == ("odd name", ("a",))
    arg = m.main.args[0].sharding
    assert isinstance(arg, Sharding) and arg.mesh == "mesh" and arg.axes == [("x",), ()]
    assert (arg.dims[0].closed, arg.dims[0].priority, arg.replicated) == (False, 1, ("y",))
    assert str(arg) == '#sdy.sharding<@mesh, [{"x", ?}p1, {}], replicated={"y"}>'
    assert m.main.results[0].sharding.spec == {1: ["y"]}
    assert m.find("sdy.sharding_constraint")[0].attributes["sharding"].spec == {0: ["x"]}
    assert m.num_partitions == 4


def test_locations_and_aliases():
    m = parse('''#loc1 = loc("x")
module @jit_f {
  func.func public @main(%arg0: tensor<2xf32> loc("x")) -> (tensor<2xf32>) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<2xf32> loc(#loc4)
    %1 = stablehlo.add %0, %0 : tensor<2xf32> loc(callsite("f"("a.py":3:4) at "b.py":9:1 to :7))
    %2 = stablehlo.abs %1 : tensor<2xf32> loc(fused["a.py":1:1, unknown])
    return %2 : tensor<2xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("t.py":5:10 to 6:2)
#loc4 = loc("jit(f)/mul"(#loc2))''')
    ops = m.main.body.ops
    assert ops[0].location == LocRef("#loc4")
    assert m.aliases["#loc2"] == FileLoc("t.py", 5, 10, 6, 2)
    assert m.main.args[0].location == NameLoc("x")
    assert isinstance(ops[1].location, CallSiteLoc) and isinstance(ops[2].location, FusedLoc)
    assert ops[0].where(m.aliases) == "line 4, column 5 (jit(f)/mul at t.py:5:10)"
    assert "f at a.py:3:4 called from b.py:9:1" in ops[1].where(m.aliases)


SYNTAX_ERRORS = [  # (text, line, column, message fragment)
    (fn("%0 = stablehlo.add %x, %x : tensor<2xf32>")[:-2], 2, 42,
     "unexpected end of input; expected ',', '->', 'loc', '}', a block label (^bb0), an "
     "identifier or an op"),
    (fn("%0 = stablehlo.add %x %x : tensor<2xf32>\nreturn %0 : tensor<2xf32>"), 2, 1,
     "stablehlo.add: cannot read `%x %x`"),
    (fn("%0 = stablehlo.abs %x\n%1 = stablehlo.abs %0 : tensor<2xf32>\nreturn %1 : tensor<2xf32>"),
     3, 1, "expected ':' and the types of stablehlo.abs before the end of line 2"),
    (fn('%0 = "stablehlo.abs"(%x) : (tensor<2xf32>) tensor<2xf32>'), 2, 44,
     "unexpected 'tensor'; expected '->'"),
    (fn("%0 = stablehlo.transpose %x, dims = [a] : tensor<2xf32>"), 2, 1,
     "expected a list of integers, got [a]"),
    ("func.func @f(%x: tensor<2xf32>) { return %x : tensor<2xf32> } $", 1, 63,
     "unexpected character '$'; expected 'func.func', 'loc', 'module', an alias (#name) or end "
     "of input"),
    (fn('%0:2 = "stablehlo.abs"(%x) : (tensor<2xf32>) -> tensor<2xf32>'), 2, 1,
     "defines 2 result(s) but its type has 1"),
    ("module { func.func @f(%x: tensor<2xf32>) -> () { %0 = stablehlo.slice %x [1:2:3:4] : "
     "tensor<2xf32> } }", 1, 50,
     "stablehlo.slice: expected start:limit(:stride), got 1 : 2 : 3 : 4"),
]


@pytest.mark.parametrize("text,line,col,fragment", SYNTAX_ERRORS,
                         ids=[str(i) for i in range(len(SYNTAX_ERRORS))])
def test_syntax_errors(text, line, col, fragment):
    with pytest.raises(StableHLOSyntaxError) as e:
        parse(text)
    assert (e.value.line, e.value.column) == (line, col), str(e.value)
    assert fragment in str(e.value)
    assert str(e.value).startswith(f"line {line}, column {col}: ")
    assert str(e.value).splitlines()[-1].strip() == "^"


def test_other_custom_forms_are_kept_as_text():
    conv = ("%0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->"
            "[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} "
            "{batch_group_count = 1 : i64, feature_group_count = 1 : i64} : "
            "(tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x5x5xf32>")
    text = fn(conv + "\nreturn %0 : tensor<1x1x5x5xf32>",
              "%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x2x2xf32>", "tensor<1x1x5x5xf32>")
    op = parse(text).find("stablehlo.convolution")[0]
    assert [str(u) for u in op.operands] == ["%x", "%w"]
    # the convolution's custom form is read since the window family (nxpy.stablehlo.rules_conv)
    assert "dimension_numbers" in op.attrs and "custom_assembly" not in op.attrs
    odd = fn("%0 = chlo.sinh(%x, k = 2) : tensor<2xf32> -> tensor<2xf32>\n"
             "return %0 : tensor<2xf32>")
    with pytest.raises(UnsupportedOpError,
                       match=r"its custom form `\(%x, k = 2\)` is not one nxpy"):
        load(odd).debug_expr()


def test_syntax_error_lists_what_was_expected():
    with pytest.raises(StableHLOSyntaxError) as e:
        parse("func.func @f(%x tensor<2xf32>)")
    assert e.value.expected == ["':'"]
    assert isinstance(e.value, SyntaxError)


# ----------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------
def test_load_runs_eagerly_and_traces_to_nxpy_ops():
    prog = load(to_mlir(lambda x, w: nx.sum(nx.dot(x, w) * 2, axes=[0]),
                        nx.template((2, 3), "f32"), nx.template((3, 4), "f32")))
    x, w = nx.iota((2, 3), type="f32"), nx.iota((3, 4), type="f32")
    assert prog(x, w).tolist() == (nx.sum(nx.dot(x, w) * 2, axes=[0])).tolist()
    graph = str(debug_expr(prog)(*prog.templates))
    for line in ("dot a, b, contract_a: [1]", "multiply", "sum c"):
        assert any(line.split()[0] in g for g in graph.splitlines()), graph
    assert "sum" in graph and "dot" in graph


def test_unsupported_op_names_the_op_and_location():
    text = '''module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "stablehlo.sort"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) {dimension = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32> loc(#loc3)
    return %0 : tensor<4xf32>
  }
}
#loc3 = loc("jit(f)/sort"("f.py":12:8))'''
    with pytest.raises(UnsupportedOpError) as e:  # load traces the module: it fails there
        load(text)
    assert e.value.op_name == "stablehlo.sort"
    # sorts load since the sorting family (issue 13), but not with a comparator that
    # leaves NaN's place undefined (a plain LT FLOAT compare)
    assert str(e.value).startswith("stablehlo.sort at line 3, column 5 (jit(f)/sort at "
                                   "f.py:12:8): a sort whose comparator does not order")


UNSUPPORTED = [
    (fn('%0 = stablehlo.custom_call @foo(%x) : (tensor<2xf32>) -> tensor<2xf32>\n'
        "return %0 : tensor<2xf32>"), "stablehlo.custom_call at line 2, column 1"),
    (fn("%c = stablehlo.constant dense<1.0> : tensor<f32>\n"
        "%0 = stablehlo.reduce(%x init: %c) applies stablehlo.divide across dimensions = [] : "
        "(tensor<2xf32>, tensor<f32>) -> tensor<2xf32>\nreturn %0 : tensor<2xf32>"),
     "a reduce over no dimensions with a custom body"),
    (fn('%0 = "stablehlo.all_reduce"(%x) '
        '<{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({\n'
        "^bb0(%a: tensor<f32>, %b: tensor<f32>):\n  %s = stablehlo.add %a, %b : tensor<f32>\n"
        "  stablehlo.return %s : tensor<f32>\n}) : (tensor<2xf32>) -> tensor<2xf32>\n"
        "return %0 : tensor<2xf32>"), "a collective outside sdy.manual_computation"),
]


@pytest.mark.parametrize("text,fragment", UNSUPPORTED, ids=["custom_call", "reduce", "collective"])
def test_unsupported(text, fragment):
    with pytest.raises(UnsupportedOpError, match=fragment):
        load(text).debug_expr()


def test_argument_checks():
    prog = load(fn("return %x : tensor<2xf32>"))
    with pytest.raises(ValueError, match=r"argument 0 \(%x\) must be f32\[2\] \(tensor<2xf32>\), "
                                         r"got s32\[2\]"):
        prog(nx.tensor([1, 2]))
    with pytest.raises(TypeError, match="takes 1 argument"):
        prog()
    with pytest.raises(KeyError, match="no function @nope"):
        load(fn("return %x : tensor<2xf32>"), entry="nope")


def test_calls_are_inlined():
    prog = load('''module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = call @double(%x) : (tensor<2xf32>) -> tensor<2xf32>
    %1 = func.call @double(%0) : (tensor<2xf32>) -> tensor<2xf32>
    return %1 : tensor<2xf32>
  }
  func.func private @double(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %a : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}''')
    assert prog(nx.tensor([1.0, 2.0])).tolist() == [4.0, 8.0]
    assert str(debug_expr(prog)(*prog.templates)).count("add") == 2


# ----------------------------------------------------------------------------------------
# The round trip: nxpy program → module → parse → load → run, on EXLA and the Evaluator
# ----------------------------------------------------------------------------------------
def _f32(*shape, seed=0):
    return nx.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _ints(t, *shape, lo=-20, hi=20, seed=1):
    return nx.tensor(np.random.default_rng(seed).integers(lo, hi, shape), type=t)


X, Y = _f32(3, 4), _f32(3, 4, seed=5)
ROUND_TRIP = {
    # elementwise families
    "unary_f32": (lambda x: [getattr(nx, op)(x) for op in (
        "negate", "abs", "sign", "floor", "ceil", "round", "exp", "expm1", "sin", "cos", "tan",
        "tanh", "atan", "sinh", "cosh", "asinh", "sigmoid", "erf", "erfc", "cbrt", "is_nan",
        "is_infinity", "logical_not")] + [nx.log(nx.abs(x) + 1), nx.sqrt(nx.abs(x)),
                                          nx.rsqrt(nx.abs(x) + 1), nx.log1p(nx.abs(x)),
                                          nx.asin(x / 4), nx.acos(x / 4), nx.atanh(x / 4),
                                          nx.acosh(nx.abs(x) + 1), nx.erf_inv(x / 4)], [X]),
    "unary_other_types": (lambda a, b, c: [nx.negate(a), nx.abs(a), nx.sign(a), nx.bitwise_not(b),
                                           nx.exp(c), nx.abs(c), nx.is_nan(c), nx.is_infinity(c),
                                           nx.sqrt(c), nx.sign(b)],
                          [_ints("s8", 5), _ints("u16", 5, lo=0),
                           nx.tensor([1 + 2j, -3j, 0.5], type="c64")]),
    "binary": (lambda a, b: [a + b, a - b, a * b, a / b, nx.pow(nx.abs(a), b), nx.atan2(a, b),
                             nx.min(a, b), nx.max(a, b), nx.remainder(a, b), a == b, a != b,
                             a < b, a <= b, a > b, a >= b, nx.logical_and(a > 0, b > 0),
                             nx.logical_or(a > 0, b > 0), nx.logical_xor(a > 0, b > 0)], [X, Y]),
    "integer_binary": (lambda a, b: [a + b, a * b, nx.quotient(a, b), nx.remainder(a, b),
                                     a // b, a % b, nx.bitwise_and(a, b), nx.bitwise_or(a, b),
                                     nx.bitwise_xor(a, b), nx.left_shift(a, 2),
                                     nx.right_shift(a, 1), nx.pow(a, 2), nx.min(a, b), a < b],
                       [_ints("s32", 6), _ints("s32", 6, lo=1, hi=5, seed=2)]),
    "unsigned_and_pred": (lambda a, b, p, q: [a + b, a - b, nx.quotient(a, b), nx.right_shift(a, 1),
                                              a > b, nx.bitwise_and(p, q), p == q, p + q,
                                              nx.select(p, a, b)],
                          [_ints("u8", 6, lo=0, hi=200), _ints("u8", 6, lo=1, hi=9, seed=3),
                           nx.tensor([True, False, True, False, True, True]),
                           nx.tensor([True, True, False, False, True, False])]),
    "wide_and_half_types": (lambda a, b, c, d: [a * 2 + 1, b / 3, nx.exp(c), d + d, nx.sum(c)],
                            [_ints("s64", 4), nx.tensor([1.0, 2.0], type="f64"),
                             nx.tensor([0.5, 1.5], type="f16"),
                             nx.tensor([1.0, 2.5], type="bf16")]),
    "as_type": (lambda x: [nx.as_type(x * 100, t) for t in
                           ("s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16",
                            "f64", "c64", "c128", "pred")], [X]),
    "as_type_from_each": (lambda a, b, c, d: [nx.as_type(a, "f32"), nx.as_type(b, "s8"),
                                              nx.as_type(c, "f32"), nx.as_type(d, "s32"),
                                              nx.as_type(c, "c128")],
                          [_ints("u64", 3, lo=0), nx.tensor([1e3, -1e3, float("nan")], type="f64"),
                           nx.tensor([1 + 1j, 2 - 1j, 0j], type="c64"),
                           nx.tensor([True, False, True])]),
    "bitcast": (lambda x, z: [nx.bitcast(x, "s32"), nx.bitcast(x, "u32"), nx.bitcast(z, "u64"),
                              nx.bitcast(nx.bitcast(z, "f64"), "c64")],
                [X, nx.tensor([1 + 2j, -0.5j], type="c64")]),
    "select_clip": (lambda x, y: [nx.select(x > 0, x, y), nx.clip(x, -0.5, 0.5),
                                  nx.select(True, x, 0.0)], [X, Y]),
    # creation, constants
    "creation": (lambda x: [nx.iota((2, 3)), nx.iota((2, 3), axis=1, type="f32"), nx.eye(3),
                            nx.full((2, 2), 7.5), x + nx.tensor([[1.0, -0.0, float("nan"), 2.0]]),
                            nx.tensor([[1, 2], [3, 4]], type="u64") * 3], [X]),
    # shapes
    "shapes": (lambda x: [nx.reshape(x, (4, 3)), nx.broadcast(x[0], (2, 4)),
                          nx.broadcast(nx.reshape(x[:, 0], (3, 1)), (3, 5)), nx.transpose(x),
                          nx.pad(x, 0.5, [(1, -1, 1), (0, 2, 0)]), nx.reverse(x, axes=[1]),
                          x[1:3, ::2], nx.slice(x, [0, 1], [2, 3], strides=[2, 1]),
                          nx.concatenate([x, x * 2], axis=1), nx.stack([x, x], axis=1),
                          nx.squeeze(nx.new_axis(x, 0)), x[..., 2]], [X]),
    "dynamic_slices": (lambda x, i: [nx.slice(x, [i, 1], [2, 2]),
                                     nx.slice(x, [i, i], [1, 2], strides=[1, 2]),
                                     nx.put_slice(x, [i, 0], nx.full((1, 2), 9.0)), x[i]],
                       [X, nx.tensor(1)]),
    # reductions, dot, windows
    "reductions": (lambda x, b, i: [nx.sum(x), nx.sum(x, axes=[1]),
                                    nx.product(x, axes=[0], keep_axes=True),
                                    nx.reduce_max(x, axes=[0]), nx.reduce_min(x), nx.all(b),
                                    nx.any(b, axes=[0]), nx.mean(x, axes=[1]), nx.sum(i, axes=[1]),
                                    nx.product(i), nx.reduce_max(i, axes=[0])],
                   [X, X > 0, _ints("s8", 3, 4)]),
    "arg_reductions": (lambda x, i: [nx.argmax(x, axis=1), nx.argmin(x, axis=0, tie_break="high"),
                                     nx.argmax(x), nx.argmax(i, axis=0, keep_axis=True, type="s64"),
                                     nx.argmin(i > 0, axis=1)],
                       [nx.tensor([[1.0, float("nan"), 3.0, 3.0], [2.0, 2.0, -1.0, 0.0]]),
                        _ints("s16", 3, 4)]),
    "dot": (lambda a, b, c, i: [nx.dot(a, b), nx.dot(a, [0], c, [0]),
                                nx.dot(a, [1], [], b, [0], []),
                                nx.dot(nx.reshape(a, (1, 3, 4)), [2], [0],
                                       nx.reshape(b, (1, 4, 2)), [1], [0]),
                                nx.dot(i, nx.transpose(i)), nx.dot(i, a)],
            [X, _f32(4, 2, seed=3), _f32(3, 5, seed=4), _ints("s32", 3, 3)]),
    "windows": (lambda x, i: [nx.window_sum(x, (2, 2)),
                              nx.window_max(x, (2, 3), strides=[1, 2], padding="same"),
                              nx.window_sum(x, (1, 2), padding=[(1, 0), (0, 1)],
                                            window_dilations=[1, 2]),
                              nx.window_max(i, (3, 1)), nx.window_sum(i, (2, 2), strides=2)],
                [X, _ints("u16", 4, 4, lo=0)]),
    # control flow and containers
    "cond": (lambda x: nx.cond(nx.sum(x) > 0, lambda: (x * 2, {"n": nx.sum(x)}),
                               lambda: (-x, {"n": nx.tensor(0.0)})), [X]),
    "nested_cond": (lambda x, k: nx.cond(k > 1,
                                         lambda: nx.cond(k > 2, lambda: x * 3, lambda: x * 2),
                                         lambda: x), [X, nx.tensor(2)]),
    "while": (lambda x: nx.while_loop(lambda s: s["i"] < 5,
                                      lambda s: {"i": s["i"] + 1, "acc": s["acc"] * 1.5 + x},
                                      {"i": 0, "acc": x}), [X]),
    "while_in_cond": (lambda x, n: nx.cond(n > 0, lambda: nx.while_loop(
        lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] + x), (0, x))[1], lambda: x),
        [X, nx.tensor(3)]),
    "containers": (lambda t: {"a": t["x"] + 1, "b": [t["y"] * 2, (t["x"],)]},
                   [{"x": X, "y": _ints("s32", 2)}]),
}


@pytest.mark.parametrize("name", list(ROUND_TRIP))
def test_round_trip(name):
    f, args = ROUND_TRIP[name]
    with roundtrip.checking() as stats:
        jit(f, compiler="exla")(*args)
    assert (stats["modules"], stats["runs"]) == (1, 1)


FIXPOINT = ["binary", "integer_binary", "shapes", "reductions", "arg_reductions", "dot",
            "windows", "cond", "while", "creation", "select_clip"]


@pytest.mark.parametrize("name", FIXPOINT)
def test_reloaded_module_lowers_to_the_same_text(name):
    # the loader maps each op back to the nxpy op that emitted it
    f, args = ROUND_TRIP[name]
    text = to_mlir(f, *args)
    prog = load(text)
    assert to_mlir(prog, *prog.templates) == text


def test_round_trip_catches_a_wrong_mapping(monkeypatch):
    from nxpy.stablehlo import loader
    monkeypatch.setitem(loader.OPS, "stablehlo.add", loader.OPS["stablehlo.subtract"])
    with pytest.raises(roundtrip.RoundTripError, match="differs"):
        with roundtrip.checking():
            jit(lambda x: x + x, compiler="exla")(nx.tensor([1.0, 2.0]))


def test_compare_results_and_per_device_name_what_differs():
    a, b = nx.tensor([1, 2], type="s32"), nx.tensor([1.0, 2.0])
    roundtrip.compare_results((a, b), [a, b])
    roundtrip.compare_per_device([a, (a, b)], [a, (a, b)], "here")
    with pytest.raises(roundtrip.RoundTripError,
                       match=r"here: the loaded program returned 1 results, the original 2"):
        roundtrip.compare_results((a, b), a, "here")
    with pytest.raises(roundtrip.RoundTripError, match=r"result 1 \(here, device 1\) differs"):
        roundtrip.compare_per_device([(a, b), (a, b)], [(a, b), (a, b + 1e-3)], "here")
    with pytest.raises(roundtrip.RoundTripError,
                       match=r"here, device 0\): the loaded program returned s32\[3\]"):
        roundtrip.compare_per_device([a], [nx.tensor([1, 2, 3], type="s32")], "here")
    with pytest.raises(roundtrip.RoundTripError, match="results for 1 devices, the original for 2"):
        roundtrip.compare_per_device([a, a], [a], "here")
    roundtrip.compare_results(b, b + 1e-7)  # within TOLERANCES["float32"]


# --- sharded programs ---------------------------------------------------------------------
MESH = None


def grid(shape=(2, 2), names=("x", "y")):
    return nx.Mesh("grid", shape, axis_names=names)


SHARD_JIT = [  # (name, mesh shape, input shardings, fun, global args)
    ("gather_dim0", (2, 2), [{0: [0], 1: [1]}], lambda x: all_gather(x * 10, all_gather_dim=0),
     [nx.iota((4, 2))]),
    ("gather_both", (2, 2), [{0: [0, 1]}],
     lambda x: all_gather(nx.sin(x), all_gather_dim=0, axes=[1]), [_f32(8, 3)]),
    ("gather_then_ops", (2, 4), [{0: [0], 1: [1]}, {}],
     lambda x, y: nx.sum(all_gather(x, all_gather_dim=1) + y, axes=[0]),
     [_f32(4, 8), _f32(4, 8, seed=2)]),
    ("two_gathers", (2, 2), [{0: [1], 1: [0]}],
     lambda x: all_gather(all_gather(x, all_gather_dim=0), all_gather_dim=1, channel_id=7),
     [_ints("s32", 4, 4)]),
    ("no_collective", (2, 2), [{0: [0]}], lambda x: nx.exp(x) * 2, [_f32(4, 2)]),
]


@pytest.mark.parametrize("name,shape,specs,fun,args", SHARD_JIT, ids=[c[0] for c in SHARD_JIT])
def test_round_trip_shard_jit(name, shape, specs, fun, args):
    mesh = nx.Mesh("mesh", shape)
    per_device = [list(x) for x in zip(*[SH.shard(a, mesh, s) for a, s in zip(args, specs)])]
    with roundtrip.checking() as stats:
        shard_jit(fun, mesh, input_shardings=specs, compiler="exla")(per_device)
    assert (stats["sharded_modules"], stats["runs"]) == (1, 1)


SHARD_MAP = [  # (name, in_specs, out_specs, body) on a 2x2 ("x", "y") mesh, arg f32[4][8]
    ("psum", ("x", "y"), (None, "y"), lambda a: psum(a, "x")),
    ("pmax_pmin_pmean", ("x", "y"), [(None, None)] * 3,
     lambda a: (pmax(a, ("x", "y")), pmin(a, ("y", "x")), pmean(a, ("x", "y")))),
    ("all_gather", ("x", "y"), [(None, "y"), ("x", None), (None, None)],
     lambda a: (all_gather(a, axes="x", all_gather_dim=0),
                all_gather(a, axes="y", all_gather_dim=1),
                all_gather(a, axes=("x", "y"), all_gather_dim=0, tiled=False))),
    ("all_gather_groups", (None, ("x", "y")), (None, ("x", "y")),
     lambda a: all_gather(a, axes=("x", "y"), all_gather_dim=1,
                          axis_index_groups=[[0, 1], [2, 3]])),
    ("reduce_scatter", (None, None), [("x", None), (None, ("x", "y"))],
     lambda a: (psum_scatter(a, "x", scatter_dimension=0, tiled=True),
                reduce_scatter(a, ("x", "y"), 1, tiled=True))),
    ("psum_scatter_untiled", (None, None), nx.P(("x", "y")),
     lambda a: psum_scatter(a[:4], ("x", "y"), scatter_dimension=0)),
    ("all_to_all", ("x", "y"), [("x", "y"), ("x", "y")],
     lambda a: (all_to_all(a, "y", 1, 0, tiled=True), all_to_all(a[:, :2], "y", 1, 0))),
    ("ppermute_shift", ("x", "y"), [("x", "y")] * 3,
     lambda a: (ppermute(a, "x", [(0, 1), (1, 0)]), shift(a, "y", 1),
                ppermute(a, ("x", "y"), [(0, 3), (3, 1), (1, 0)]))),
    ("broadcast_index_slice", ("x", None), [("x", "y"), ("x", "y"), ("x", "y")],
     lambda a: (collective_broadcast(a, "y", source=1),
                a * nx.as_type(axis_index(("y", "x")), "f32"), all_slice(a, "y", 1))),
    ("control_flow", ("x", "y"), ("x", "y"),
     lambda a: nx.cond(axis_index("x") == 0, lambda: a * 10, lambda: -a) + psum(a, "x")),
]


@pytest.mark.parametrize("name,in_specs,out_specs,body", SHARD_MAP, ids=[c[0] for c in SHARD_MAP])
def test_round_trip_shard_map(name, in_specs, out_specs, body):
    f = shard_map(body, grid(), in_specs=in_specs, out_specs=out_specs, check_vma=False,
                  compiler="exla")
    with roundtrip.checking() as stats:
        f(_f32(4, 8))
    # a program holding a shard_map runs over its mesh: one sharded module
    assert (stats["sharded_modules"], stats["runs"]) == (1, 1)


def test_round_trip_shard_map_inside_shard_jit():
    mesh = grid()
    inner = shard_map(lambda a: psum(a, "x") * (axis_index("y") + 1), mesh, in_specs=("x", "y"),
                      out_specs=(None, "y"))
    f = shard_jit(lambda x: inner(x * 2) + 1, mesh, input_shardings=[{0: ["x"], 1: ["y"]}],
                  compiler="exla")
    per_device = [[s] for s in SH.shard(_f32(4, 4), mesh, {0: ["x"], 1: ["y"]})]
    with roundtrip.checking() as stats:
        f(per_device)
    assert stats["runs"] == 1


# ----------------------------------------------------------------------------------------
# JAX's modules under nxpy
# ----------------------------------------------------------------------------------------
_rng = np.random.default_rng(7)


def _n(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    return (x - m) * lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b


JAX_CORPUS = {
    "mlp": (lambda x, w, b: jax.nn.relu(x @ w + b), [_n(4, 3), _n(3, 5), _n(5)]),
    "mlp_gelu_tanh": (lambda x, w1, w2: jnp.tanh(jax.nn.gelu(x @ w1) @ w2),
                      [_n(4, 3), _n(3, 8), _n(8, 2)]),
    "softmax": (lambda x: jax.nn.softmax(x, axis=-1), [_n(3, 5)]),
    "log_softmax": (lambda x: jax.nn.log_softmax(x, axis=0), [_n(3, 5)]),
    "layer_norm": (_layer_norm, [_n(4, 6), _n(6), _n(6)]),
    "reductions": (lambda x: (x.sum((0, 2)), x.max((1, 2)), x.min(0), x.prod(2), x.mean((0, 1)),
                              jnp.argmax(x, 1), jnp.argmin(x, 2), jnp.all(x > -1),
                              jnp.any(x > 1, axis=(0, 1))), [_n(2, 3, 4)]),
    "cond": (lambda x: lax.cond(x.sum() > 0, lambda y: y * 2, lambda y: y - 1, x), [_n(3)]),
    "cond_tuple": (lambda x, n: lax.cond(n > 0, lambda: (x * 2, n - 1), lambda: (x, n + 1)),
                   [_n(3), np.int32(2)]),
    "switch": (lambda i, x: lax.switch(i, [lambda y: y + 1, lambda y: y * 2, lambda y: -y], x),
               [np.int32(2), _n(3)]),
    "while_loop": (lambda x: lax.while_loop(lambda s: s[0] < 10, lambda s: (s[0] + 1, s[1] * 1.5),
                                            (0, x)), [_n(3)]),
    "fori_loop": (lambda x: lax.fori_loop(0, 5, lambda i, c: c * 2 + i, x), [_n(2, 3)]),
    "dot_general_batch": (lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                          [_n(2, 3, 4), _n(2, 4, 5)]),
    "einsum": (lambda a, b: jnp.einsum("bij,bkj->bik", a, b), [_n(2, 3, 4), _n(2, 5, 4)]),
    "structural": (lambda x: (x[0:2, 1:3:2], jnp.concatenate([x, x], 1),
                              jnp.pad(x, ((1, 2), (0, 1))),
                              lax.dynamic_slice(x, (1, 1), (1, 2)), x.T, jnp.flip(x, 0),
                              jnp.clip(x, 0, 1), jnp.where(x > 0, x, 0), x.astype(jnp.int32),
                              jnp.arange(6).reshape(2, 3), jnp.round(x * 2),
                              lax.dynamic_update_slice(x, jnp.ones((1, 2), x.dtype), (1, 1))),
                   [_n(3, 4)]),
    "elementwise": (lambda x: (jnp.sinh(x), lax.erf_inv(x * 0.1), jnp.exp(x), jnp.log1p(jnp.abs(x)),
                               jnp.sign(x), jnp.floor(x), jnp.arctan2(x, 1.5), x ** 3,
                               jnp.isfinite(x / 0.0), jax.nn.sigmoid(x), jnp.cbrt(x)), [_n(4)]),
    "max_pool": (lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                             "VALID"),
                 [_n(1, 4, 4, 2)]),
    "avg_pool_same": (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "SAME") / 4,
                      [_n(4, 4)]),
    "cumsum": (lambda x: jnp.cumsum(x, axis=0), [_n(5, 2)]),
    "ints": (lambda a, b: (a // b, a % b, a >> 1, a << 2, a & b, a | b, a ^ b, ~a,
                           jnp.maximum(a, b), -a, abs(a)),
             [_rng.integers(-50, 50, (6,)).astype(np.int32),
              _rng.integers(1, 9, (6,)).astype(np.int32)]),
    "uints": (lambda a, b: (a // b, a % b, a >> 1, a + b, a > b),
              [_rng.integers(0, 50, (6,)).astype(np.uint32),
               _rng.integers(1, 9, (6,)).astype(np.uint32)]),
}


def _leaves(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("name", list(JAX_CORPUS))
def test_jax_corpus(name, compiler):
    f, args = JAX_CORPUS[name]
    text = jax.jit(f).lower(*args).as_text()
    want = jax.tree_util.tree_leaves(jax.jit(f)(*args))
    got = _leaves(load(text).jit(compiler)(*[nx.tensor(a) for a in args]))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        close(g, w, 1e-5, 1e-6, f"{name} result {i}", dtypes=True)


def test_jax_corpus_with_debug_info():
    f, args = JAX_CORPUS["layer_norm"]
    text = jax.jit(f).lower(*args).as_text(debug_info=True)
    assert "loc(" in text and "#loc" in text
    got = load(text).jit("exla")(*[nx.tensor(a) for a in args])
    close(got, jax.jit(f)(*args), 1e-5, 1e-6, "layer_norm with locations", dtypes=True)


def _jax_shard_map_body(a):
    return (lax.all_gather(a, "x", axis=0, tiled=True), lax.psum(a, "y"),
            lax.psum_scatter(lax.all_gather(a, "x", axis=0, tiled=True), "x", scatter_dimension=0,
                             tiled=True),
            lax.pmax(a, ("x", "y")), lax.pmin(a, "x"), lax.ppermute(a, "x", [(0, 1), (1, 0)]),
            a * lax.axis_index("y"), lax.all_to_all(a, "y", 1, 1, tiled=True),
            lax.all_gather(a, ("x", "y"), axis=1, tiled=True), lax.psum(a, ("x", "y")))


_JAX_OUT_SPECS = (P(None, "y"), P("x", None), P("x", "y"), P(), P(None, "y"), P("x", "y"),
                  P("x", "y"), P("x", "y"), P("x", None), P())


def _jax_mesh():
    return JMesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"))


def _spec_dict(spec):
    return {i: [a] if isinstance(a, str) else list(a) for i, a in enumerate(spec) if a is not None}


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("sharded", [False, True], ids=["replicated_input", "sharded_input"])
def test_jax_shard_map(compiler, sharded):
    jm = _jax_mesh()
    sm = jax.jit(jax.shard_map(_jax_shard_map_body, mesh=jm, in_specs=P("x", "y"),
                               out_specs=_JAX_OUT_SPECS, check_vma=False))
    x = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    want = sm(x)
    arg = jax.device_put(x, NamedSharding(jm, P("x", "y"))) if sharded else x
    prog = load(sm.lower(arg).as_text())
    assert len(prog.module.find("sdy.manual_computation")) == 1
    if not sharded:
        got = prog.jit(compiler)(nx.tensor(x))
        for i, (g, w) in enumerate(zip(got, want)):
            close(g, w, 1e-5, 1e-6, f"result {i}", dtypes=True)
        return
    mesh = prog.mesh()
    assert (mesh.name, mesh.shape, mesh.axis_names) == ("mesh", (2, 2), ("x", "y"))
    outs = prog.shard_jit(compiler)([[s] for s in SH.shard(nx.tensor(x), mesh,
                                                           {0: ["x"], 1: ["y"]})])
    for i, (w, spec) in enumerate(zip(want, _JAX_OUT_SPECS)):
        parts = read_sharding(_spec_dict(spec), np.shape(w), mesh).shard_array(np.asarray(w))
        for p in range(4):
            close(outs[p][i], parts[p], 1e-5, 1e-6, f"result {i} on device {p}", dtypes=True)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_jax_sharded_jit(compiler):
    jm = _jax_mesh()
    f = jax.jit(lambda x: jnp.sin(jax.lax.with_sharding_constraint(x * 2,
                                                                   NamedSharding(jm, P("x")))),
                out_shardings=NamedSharding(jm, P(None, "y")))
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    prog = load(f.lower(jax.device_put(x, NamedSharding(jm, P("x", "y")))).as_text())
    mesh = prog.mesh()
    outs = prog.shard_jit(compiler)([[s] for s in SH.shard(nx.tensor(x), mesh,
                                                           {0: ["x"], 1: ["y"]})])
    parts = read_sharding({1: ["y"]}, (4, 4), mesh).shard_array(np.sin(x * 2))
    for p in range(4):
        close(outs[p], parts[p], 1e-5, 1e-6, f"device {p}", dtypes=True)


# ----------------------------------------------------------------------------------------
# Structural helpers: assertions on emitted modules through the parser
# ----------------------------------------------------------------------------------------
def test_find_all_gather_in_shard_jit_module():
    mesh = nx.Mesh("mesh", (2, 4))
    spec = {0: [0], 1: [1]}
    shards = SH.shard(nx.iota((4, 8)), mesh, spec)
    m = parse(to_mlir(lambda x: all_gather(all_gather(x, all_gather_dim=1), all_gather_dim=0,
                                           channel_id=5),
                      [[s] for s in shards], mesh=mesh, input_shardings=[spec]))
    first, second = m.find("stablehlo.all_gather")
    assert first.attrs["replica_groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert second.attrs["replica_groups"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert (first.attrs["all_gather_dim"], second.attrs["all_gather_dim"]) == (1, 0)
    assert first.attrs["channel_handle"] == {"handle": 1, "type": 1}
    assert second.attributes["channel_handle"]["handle"] == 5
    assert first.attrs["use_global_device_ids"] is True
    assert [str(t) for t in first.operand_types + first.result_types] == \
        ["tensor<2x2xi32>", "tensor<2x8xi32>"]
    (mesh_syntax,) = m.meshes
    assert (mesh_syntax.name, mesh_syntax.axes) == ("mesh", [("axis_0", 2), ("axis_1", 4)])
    assert m.main.args[0].sharding.axes == [("axis_0",), ("axis_1",)]
    assert m.main.results[0].sharding.axes == [(), ()]
    mc = m.find("sdy.manual_computation")
    assert [c.attrs["in_shardings"][0].axes for c in mc] == [[("axis_0",), ("axis_1",)],
                                                             [("axis_0",), ()]]
    assert [c.attrs["manual_axes"] for c in mc] == [["axis_0", "axis_1"]] * 2
    assert m.num_partitions == 8


def test_find_collectives_in_shard_map_module():
    mesh = grid()
    f = shard_map(lambda a: (psum(a, "x"), ppermute(a, "y", [(0, 1), (1, 0)]),
                             all_to_all(a, "x", 0, 1, tiled=True),
                             psum_scatter(a, "y", tiled=True)),
                  mesh, in_specs=("x", "y"),
                  out_specs=[(None, "y"), ("x", "y"), ("x", "y"), ("x", "y")])
    m = parse(to_mlir(f, nx.template((4, 8), "f32")))
    (ar,) = m.find("stablehlo.all_reduce")
    assert ar.attrs["replica_groups"] == [[0, 2], [1, 3]]
    assert [o.name for o in ar.regions[0].ops] == ["stablehlo.add", "stablehlo.return"]
    (cp,) = m.find("stablehlo.collective_permute")
    assert cp.attrs["source_target_pairs"] == [[0, 1], [1, 0], [2, 3], [3, 2]]
    (a2a,) = m.find("stablehlo.all_to_all")
    assert (a2a.attrs["split_dimension"], a2a.attrs["concat_dimension"],
            a2a.attrs["split_count"]) == (0, 1, 2)
    (rs,) = m.find("stablehlo.reduce_scatter")
    assert rs.attrs["scatter_dimension"] == 0 and rs.attrs["replica_groups"] == [[0, 1], [2, 3]]
    (mc,) = m.find("sdy.manual_computation")
    assert mc.attrs["in_shardings"][0].spec == {0: ["x"], 1: ["y"]}
    assert [s.spec for s in mc.attrs["out_shardings"]] == [{1: ["y"]}] + [{0: ["x"], 1: ["y"]}] * 3
    assert all(a.sharding.is_replicated for a in m.main.args)


# ----------------------------------------------------------------------------------------
# The command line
# ----------------------------------------------------------------------------------------
def test_cli_prints_the_graph(tmp_path, capsys):
    path = tmp_path / "m.mlir"
    path.write_text(to_mlir(lambda x: nx.exp(x) / nx.sum(nx.exp(x)), nx.template((3,), "f32")))
    assert cli_main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "Nx.Defn.Expr" in out and "parameter a:0" in out and "sum" in out and "divide" in out
    assert cli_main(["--syntax", str(path)]) == 0
    assert "stablehlo.exponential(%arg0) : tensor<3xf32>" in capsys.readouterr().out


def test_cli_reports_errors_with_locations(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text(fn("%0 = stablehlo.add %x, %x : tensor<2xf32>")[:-2])
    assert cli_main([str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:2:42: error: line 2, column 42: unexpected end of input")
    sort = tmp_path / "sort.mlir"
    sort.write_text(fn('%0 = "stablehlo.cholesky"(%x) : (tensor<2x2xf32>) -> tensor<2x2xf32>\n'
                       "return %0 : tensor<2x2xf32>", "%x: tensor<2x2xf32>", "tensor<2x2xf32>"))
    assert cli_main([str(sort)]) == 1
    err = capsys.readouterr().err
    assert "stablehlo.cholesky at line 2, column 1: nxpy has no equivalent" in err
    assert cli_main([str(tmp_path / "missing.mlir")]) == 1


def test_cli_sharded_module(tmp_path, capsys):
    mesh = nx.Mesh("mesh", (2, 2))
    spec = {0: [0], 1: [1]}
    path = tmp_path / "sharded.mlir"
    path.write_text(to_mlir(lambda x: all_gather(x * 10, all_gather_dim=0),
                            [[s] for s in SH.shard(nx.iota((4, 2)), mesh, spec)], mesh=mesh,
                            input_shardings=[spec]))
    assert cli_main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "parameter a:0" in out and "s32[4][2]" in out  # traced at global shapes
    assert "all_gather" in out and "axes: [0]" in out and "replica_groups: [[0, 2], [1, 3]]" in out


def test_cli_entry_point(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(fn("%0 = stablehlo.multiply %x, %x : tensor<2xf32>\nreturn %0 : tensor<2xf32>"))
    r = subprocess.run([sys.executable, "-m", "nxpy.stablehlo", str(path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "b = multiply a, a" in r.stdout
