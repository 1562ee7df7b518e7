r"""The lark grammar of MLIR modules as nxpy and JAX print them.

It covers MLIR's generic syntax: modules, ``func.func``, ``sdy.mesh``, ops in the
generic form (``"stablehlo.add"(%a, %b) <{...}> ({regions}) : (...) -> ...``), regions
and blocks, types, attributes and ``loc(...)`` information. An op in a custom (pretty)
form (``stablehlo.broadcast_in_dim %x, dims = [0] : (...) -> ...``) is read as its name,
a comma-separated list of *entries* (runs of atoms: values, numbers, words, bracketed
groups, regions, split by ``=``), an optional type signature and labelled trailing
regions (``cond {...} do {...}``); :mod:`nxpy.stablehlo.assembly` decodes the entries of
each op into the canonical form. The bodies of dialect attributes (``#stablehlo.dot<...>``,
``#sdy.sharding<...>``) are entries too.

>>> from lark import Lark
>>> tree = Lark(GRAMMAR, parser="lalr").parse(
...     "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
...     "  %0 = stablehlo.reverse %x, dims = [0] : tensor<2xf32>\n"
...     "  return %0 : tensor<2xf32>\n}")
>>> print(next(tree.find_data("custom_args")).pretty())  # doctest: +NORMALIZE_WHITESPACE
custom_args
  top_entry %x
  top_entry
    dims
    eq
    bracket
      entry 0

The grammar is LALR(1) with lark's contextual lexer (so ``0x`` in ``tensor<0xf32>`` is a
dimension, not a hex number). Its one ambiguity is MLIR's own: nothing but a newline ends
a custom op that has no ``:`` type signature, so the next op's tokens could be read as
more of its operands. The parser resolves it by reading on (lark's shift preference) and
the tree builder then rejects an op whose operands continue on a later line, which MLIR
printers never produce.
"""

GRAMMAR = r"""
start: _item*
_item: module | func | alias

module: "module" [SYMBOL] ["attributes" attr_dict] "{" _module_item* "}" [loc]
_module_item: func | mesh | op
alias: HASH_ID "=" (loc | attr_value)

// ---- functions -------------------------------------------------------------------------
func: "func.func" [VISIBILITY] SYMBOL "(" [func_arg ("," func_arg)*] ")" ["->" func_results] ["attributes" attr_dict] [region] [loc]
func_arg: VALUE_ID ":" type [attr_dict] [loc]
func_results: type                                     -> single_result
            | "(" [func_result ("," func_result)*] ")"
func_result: type [attr_dict] [loc]

// ---- Shardy meshes: sdy.mesh @mesh = <["x"=2, "y"=2]> ------------------------------------
mesh: "sdy.mesh" SYMBOL "=" group [attr_dict] [loc]

// ---- ops -------------------------------------------------------------------------------
op: [results "="] (generic_op | custom_op) [loc]
results: result ("," result)*
result: VALUE_ID [":" INT]

generic_op: STRING "(" [VALUE_ID ("," VALUE_ID)*] ")" [properties] [regions] [attr_dict] ":" function_type
properties: "<" attr_dict ">"
regions: "(" region ("," region)* ")"

custom_op: op_name [custom_args] [":" type_sig labeled_region*]
op_name: OP_NAME | RETURN | CALL
custom_args: top_entry ("," top_entry)*
labeled_region: BARE_ID group* region
type_sig: sig_part ["->" sig_part]
sig_part: type ("," type)* | type_group
type_group: "(" [type ("," type)*] ")"

// ---- regions and blocks ----------------------------------------------------------------
region: "{" (op+ block* | block+) "}"
block: BLOCK_ID ["(" [block_arg ("," block_arg)*] ")"] ":" op*
block_arg: VALUE_ID ":" type [loc]

// ---- custom forms: entries are runs of atoms, split by "=" (and ":" inside groups) -----
top_entry: _atom+ (eq _atom+)*
entry: _atom+ ((eq | colon) _atom+)*
eq: "="
colon: ":"
_atom: VALUE_ID | SYMBOL | BARE_ID | OP_NAME | INT | FLOAT | HEX | STRING | TRUE | FALSE
     | ARROW | dense | array | dialect_attr | _type_atom | group | brace | region
group: "(" [entry ("," entry)*] ")"                     -> paren
     | "[" [entry ("," entry)*] "]"                     -> bracket
     | "<" [entry ("," entry)*] ">"                     -> angle
brace: "{" [brace_item ("," brace_item)*] "}"
brace_item: (BARE_ID | STRING | QMARK) [eq _atom+ ((eq | colon) _atom+)*]
          | OP_NAME eq _atom+ ((eq | colon) _atom+)*

// ---- attributes ------------------------------------------------------------------------
attr_dict: "{" [attr_entry ("," attr_entry)*] "}"
attr_entry: (BARE_ID | OP_NAME | STRING) ["=" attr_value]
attr_value: _attr [":" type]
_attr: INT | FLOAT | HEX | STRING | TRUE | FALSE | BARE_ID | SYMBOL
     | list_attr | attr_dict | dense | array | dialect_attr | _type_atom
list_attr: "[" [attr_value ("," attr_value)*] "]"
dialect_attr: DIALECT_OPEN [entry ("," entry)*] ">"
            | HASH_ID                                   -> attr_ref
dense: "dense" "<" [_dense_value] ">"
_dense_value: INT | FLOAT | HEX | STRING | TRUE | FALSE | dense_list | dense_complex
dense_list: "[" [_dense_value ("," _dense_value)*] "]"
dense_complex: "(" _dense_value "," _dense_value ")"
array: "array" "<" type [":" [_array_value ("," _array_value)*]] ">"
_array_value: INT | FLOAT | TRUE | FALSE

// ---- types -----------------------------------------------------------------------------
type: _type_atom | BARE_ID                              -> scalar_type
_type_atom: tensor_type | complex_type | tuple_type | opaque_type
opaque_type: BANG_ID
tensor_type: "tensor" "<" [DIMS] type ["," _attr] ">"
complex_type: "complex" "<" type ">"
tuple_type: "tuple" "<" [type ("," type)*] ">"
function_type: type_group "->" (type | type_group)

// ---- locations -------------------------------------------------------------------------
loc: "loc" "(" loc_body ")"
loc_body: "unknown"                                         -> loc_unknown
    | STRING ":" INT ":" INT [TO [INT] ":" INT]         -> loc_file
    | STRING ["(" loc_body ")"]                             -> loc_name
    | "callsite" "(" loc_body "at" loc_body ")"                 -> loc_callsite
    | "fused" ["<" _attr ">"] "[" loc_body ("," loc_body)* "]"  -> loc_fused
    | HASH_ID                                           -> loc_ref

// ---- terminals -------------------------------------------------------------------------
VALUE_ID: /%[A-Za-z0-9_$.\-]+(#[0-9]+)?/
BLOCK_ID: /\^[A-Za-z0-9_$.\-]+/
SYMBOL: /@[A-Za-z_$.][A-Za-z0-9_$.\-]*/ | /@"[^"]*"/
DIALECT_OPEN: /#[A-Za-z_][A-Za-z0-9_$.]*</
HASH_ID: /#[A-Za-z0-9_$.\-]+/
BANG_ID: /![A-Za-z_][A-Za-z0-9_$.]*/
OP_NAME: /[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z0-9_$]+)+/
BARE_ID: /[A-Za-z_][A-Za-z0-9_$]*/
DIMS: /((\d+|\?)x)+/
HEX: /0x[0-9A-Fa-f]+/
FLOAT.2: /[-+]?(\d+\.\d*([eE][-+]?\d+)?|\d+[eE][-+]?\d+)/
INT: /[-+]?\d+/
STRING: /"([^"\\]|\\.)*"/
TRUE: "true"
FALSE: "false"
RETURN: "return"
CALL: "call"
TO: "to"
ARROW: "->"
QMARK: "?"
VISIBILITY: "public" | "private" | "nested"
COMMENT: /\/\/[^\n]*/

%import common.WS
%ignore WS
%ignore COMMENT
"""  # noqa: E501 - a lark rule is one line (it continues only at a "|")
