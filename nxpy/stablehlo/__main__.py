"""``python -m nxpy.stablehlo FILE.mlir``: parse a module, load it and print its nxpy Expr
graph (``debug_expr``); on an error print it with its location and exit with status 1.

Options: ``--entry NAME`` picks the function (default ``@main``); ``--syntax`` prints
the parsed ops instead of the graph; ``-`` reads standard input.
"""
from __future__ import annotations

import argparse
import sys

from .loader import LoadError, load
from .parser import StableHLOError, StableHLOSyntaxError, parse
from .syntax import to_python


def _outline(module) -> str:
    """One line per op: ``%0 = stablehlo.add(%a, %b) {attrs} : types``, nested by region."""
    lines = []
    for m in module.meshes:
        lines.append(f"sdy.mesh @{m.name} = {m}")

    def ops(region, indent):
        for block in region.blocks:
            if block.args:
                lines.append(indent + "^(" + ", ".join(f"{a.name}: {a.type}" for a in block.args)
                             + "):")
            for o in block.ops:
                res = ", ".join(o.results)
                attrs = {k: to_python(v) for k, v in o.attributes.items()}
                types = ", ".join(map(str, o.result_types))
                lines.append(f"{indent}{res + ' = ' if res else ''}{o.name}"
                             f"({', '.join(map(str, o.operands))})"
                             f"{' ' + repr(attrs) if attrs else ''}"
                             f"{' : ' + types if types else ''}")
                for r in o.regions:
                    ops(r, indent + "  ")

    for f in module.funcs:
        args = ", ".join(f"{a.name}: {a.type}" for a in f.args)
        res = ", ".join(str(r.type) for r in f.results)
        lines.append(f"func @{f.name}({args}) -> ({res})")
        if f.body is not None:
            ops(f.body, "  ")
    return "\n".join(lines)


def _graph(prog) -> str:
    out = prog.debug_expr()
    outs = out if isinstance(out, tuple) else (out,)
    if len(outs) == 1:
        return str(outs[0])
    return "\n".join(f"result {i}:\n{o}" for i, o in enumerate(outs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nxpy.stablehlo",
                                 description="Parse a StableHLO module and print its nxpy "
                                             "Expr graph.")
    ap.add_argument("file", help="the .mlir file ('-' for standard input)")
    ap.add_argument("--entry", default=None, help="the function to load (default: @main)")
    ap.add_argument("--syntax", action="store_true",
                    help="print the parsed ops instead of the Expr graph")
    args = ap.parse_args(argv)
    name = "<stdin>" if args.file == "-" else args.file
    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    except OSError as e:
        print(f"{name}: error: {e.strerror or e}", file=sys.stderr)
        return 1
    try:
        module = parse(text)
        if args.syntax:
            print(_outline(module))
            return 0
        print(_graph(load(module, entry=args.entry)))
    except StableHLOSyntaxError as e:
        print(f"{name}:{e.line}:{e.column}: error: {e}", file=sys.stderr)
        return 1
    except (LoadError, StableHLOError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) else str(e)
        print(f"{name}: error: {msg}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
