"""Every failure of ``nxpy.stablehlo.load`` is one of its errors (``StableHLOError``: a
``LoadError``, ``UnsupportedOpError`` or ``StableHLOSyntaxError``) naming the construct
and its line, never a bare error from inside a rule."""
from __future__ import annotations

import re

import pytest

from nxpy.stablehlo import (OPS, LoadError, StableHLOError, StableHLOSyntaxError,
                            UnsupportedOpError, load)


def _module(body, args="%x: tensor<3xf32>", result="tensor<3xf32>"):
    return (f"func.func @main({args}) -> {result} {{\n{body}\n}}\n")


def _fails(text, error, *words, line=None):
    with pytest.raises(error) as info:
        load(text)
    msg = str(info.value)
    for w in words:
        assert w in msg, msg
    if line is not None:
        assert re.search(rf"\bline {line}\b", msg), msg
    return info.value


def test_unknown_stablehlo_op():
    e = _fails(_module("  %0 = stablehlo.frobnicate %x : tensor<3xf32>\n"
                       "  return %0 : tensor<3xf32>"),
               UnsupportedOpError, "stablehlo.frobnicate", "no equivalent", line=2)
    assert e.op_name == "stablehlo.frobnicate"


def test_unknown_chlo_op():
    _fails(_module("  %0 = chlo.bessel_k0 %x : tensor<3xf32> -> tensor<3xf32>\n"
                   "  return %0 : tensor<3xf32>"),
           UnsupportedOpError, "chlo.bessel_k0", line=2)


def test_unknown_op_in_a_compact_reduce_body_names_the_reduce_line():
    text = _module("  %c = stablehlo.constant dense<0.0> : tensor<f32>\n"
                   "  %0 = stablehlo.reduce(%x init: %c) applies stablehlo.fold across "
                   "dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>\n"
                   "  return %0 : tensor<f32>", result="tensor<f32>")
    _fails(text, UnsupportedOpError, "stablehlo.fold", line=3)


def test_bad_attribute_value():
    text = _module('  %0 = "stablehlo.compare"(%x, %x) {comparison_direction = '
                   '#stablehlo<comparison_direction XX>} : (tensor<3xf32>, tensor<3xf32>) '
                   '-> tensor<3xi1>\n  return %0 : tensor<3xi1>', result="tensor<3xi1>")
    _fails(text, LoadError, "stablehlo.compare", "XX", line=2)


def test_missing_attribute():
    text = _module('  %0 = "stablehlo.transpose"(%x) : (tensor<3xf32>) -> tensor<3xf32>\n'
                   "  return %0 : tensor<3xf32>")
    _fails(text, LoadError, "stablehlo.transpose", "permutation", line=2)


def test_a_literal_where_a_value_belongs():
    text = _module("  %0 = stablehlo.add %x, 1 : tensor<3xf32>\n  return %0 : tensor<3xf32>")
    _fails(text, StableHLOError, "stablehlo.add", line=2)


def test_inconsistent_types_name_the_op():
    text = _module("  %0 = stablehlo.add %x, %x : tensor<4xf32>\n  return %0 : tensor<4xf32>",
                   result="tensor<4xf32>")
    _fails(text, LoadError, "stablehlo.add", line=2)


def test_unsupported_element_type_names_the_function_and_line():
    text = "module {\n" + _module("  return %x : tensor<3xf8E4M3FN>",
                                  args="%x: tensor<3xf8E4M3FN>",
                                  result="tensor<3xf8E4M3FN>") + "}"
    _fails(text, LoadError, "@main", "f8E4M3FN", line=2)


def test_any_failure_inside_a_rule_is_a_load_error_at_the_op():
    """A rule that fails with an unexpected exception (here an AttributeError of a plugin
    rule) is reported as a LoadError naming the op and line, the original chained."""
    def broken(scope, op, x):
        return x.no_such_attribute
    OPS["test.broken"] = broken
    try:
        text = _module('  %0 = "test.broken"(%x) : (tensor<3xf32>) -> tensor<3xf32>\n'
                       "  return %0 : tensor<3xf32>")
        e = _fails(text, LoadError, "test.broken", "AttributeError", line=2)
        assert isinstance(e.__context__, AttributeError)
    finally:
        del OPS["test.broken"]


def test_syntax_errors_have_a_line():
    e = _fails(_module("  %0 = stablehlo.add %x %x : tensor<3xf32>\n  return %0 : tensor<3xf32>"),
               StableHLOSyntaxError)
    assert e.line == 2


def test_no_entry_function():
    text = "".join(f"func.func private @{f}(%x: tensor<f32>) -> tensor<f32> {{\n"
                   f"  return %x : tensor<f32>\n}}\n" for f in "fg")
    _fails(text, LoadError, "no @main function", "@f", "@g")
    with pytest.raises(LoadError, match="no function @h"):
        load(text, entry="h")
