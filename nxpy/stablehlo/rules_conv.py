"""Importer rule for ``stablehlo.convolution`` (both the generic form and JAX's pretty
form ``dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {...}``) → ``conv``
with Nx's permutations; ``window_reversal`` reverses the kernel's spatial dims first."""
from __future__ import annotations

from .. import ops as nx
from .assembly import FormError, _with, attr_of, i64_array, register_form
from .rules import _fail, register_op, rtype
from .syntax import DialectAttr, Use

__all__ = ["permutations"]


@register_form("stablehlo.convolution")
def _conv_form(form):
    operands = []
    for e in form.entries:
        for a in e:
            if hasattr(a, "kind") and a.kind == "(" and hasattr(a, "entries"):
                operands += [x[0] for x in a.entries if len(x) == 1 and isinstance(x[0], Use)]
    dn = form.keyword("dim_numbers")
    if len(dn) != 5:
        raise FormError("stablehlo.convolution: expected `dim_numbers = [..]x[..]->[..]`")
    attrs = {"dimension_numbers": DialectAttr("stablehlo.conv", {}, [
        attr_of(dn[0]), "x", attr_of(dn[2]), "->", attr_of(dn[4])])}
    win = form.keyword("window", required=False)
    names = {"stride": "window_strides", "lhs_dilate": "lhs_dilation",
             "rhs_dilate": "rhs_dilation", "pad": "padding", "reverse": "window_reversal"}
    if win:
        for extra in win[1:]:  # the trailing {...} attribute dictionary
            attrs.update(attr_of(extra))
        for k, v in attr_of(win[0]).items():
            if k not in names:
                raise FormError(f"stablehlo.convolution: unknown window field `{k}`")
            if k == "pad":
                attrs["padding"] = [list(map(int, p)) for p in v]
            elif k == "reverse":
                attrs["window_reversal"] = [str(b) == "true" or b is True for b in v]
            else:
                attrs[names[k]] = i64_array(v)
    attrs.update(form.attr_dict())
    for e in form.entries:  # the operand group sits in the dim_numbers entry (read above)
        form.take(e)
    return _with(form, operands, attrs)


def _roles(spec):
    return [str(v) if not isinstance(v, int) or isinstance(v, bool) else int(v) for v in spec]


def permutations(dn):
    """Nx's (input, kernel, output) permutations from conv dimension numbers."""
    args = dn.args if isinstance(dn, DialectAttr) else dn
    if len(args) == 1 and isinstance(args[0], list):  # the generic form's one positional part
        args = args[0]
    lhs, rhs, out = _roles(args[0]), _roles(args[2]), _roles(args[4])

    def perm(roles, a, b):
        n = len(roles)
        return [roles.index(a), roles.index(b)] + [roles.index(i) for i in range(n - 2)]
    return perm(lhs, "b", "f"), perm(rhs, "o", "i"), perm(out, "b", "f")


def _int(v):
    while isinstance(v, list):  # `1 : i64` read from a custom form's {...}
        v = v[0]
    return int(v)


@register_op("stablehlo.convolution")
def _convolution(scope, op, x, k):
    a = op.attributes
    n = x.rank - 2
    ip, kp, opm = permutations(a["dimension_numbers"])
    _, t = rtype(op)
    if not t.is_inexact:
        _fail(op, scope, f"a convolution with an integer result ({t}): nxpy's conv computes "
                         f"in floats", unsupported=True)
    pad = a.get("padding")
    pads = pad.tolist() if hasattr(pad, "tolist") else pad
    pads = [tuple(int(v) for v in p) for p in pads] if pads else [(0, 0)] * n
    rev = a.get("window_reversal")
    if rev is not None:
        if hasattr(rev, "tolist"):
            rev = rev.tolist()
        axes = [kp[2 + i] for i, b in enumerate(rev) if b]
        if axes:
            k = nx.reverse(k, axes)

    def ints(key):
        v = a.get(key)
        return [int(i) for i in v] if v is not None and len(v) else [1] * n
    return nx.conv(nx.as_type(x, t), nx.as_type(k, t), strides=ints("window_strides"),
                   padding=pads, input_dilation=ints("lhs_dilation"),
                   kernel_dilation=ints("rhs_dilation"),
                   feature_group_size=_int(a.get("feature_group_count", 1)),
                   batch_group_size=_int(a.get("batch_group_count", 1)),
                   input_permutation=ip, kernel_permutation=kp, output_permutation=opm)
