"""The Compiler protocol, compiler registry and option handling.

A compiler turns a traced :class:`~nxpy.defn.expr.Fn` (the graph) into an executable:
a callable taking the flat list of argument tensors and returning the flat list of
results. ``defn`` does the tracing and the caching; a compiler never sees a Python
function, only graphs, so every compiler runs the same program.
"""
from __future__ import annotations

__all__ = ["Compiler", "get_compiler", "register_compiler_factory", "check_options"]


class Compiler:
    """Base class of compilers.

    ``options`` lists the option names the compiler accepts (besides ``compiler``).
    ``compile(graph, opts)`` returns ``run(args: list[Tensor]) -> list[Tensor]``.
    """

    name = "compiler"
    options: frozenset = frozenset()

    def compile(self, graph, opts):  # pragma: no cover - protocol
        raise NotImplementedError

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r}>"


def register_compiler_factory(name, factory):
    """Registers a built-in compiler (plugins use :func:`nxpy.register_compiler`)."""
    from ..plugins import COMPILERS
    COMPILERS.register(name, factory, origin="built into nxpy", replace=True)


def get_compiler(compiler) -> Compiler:
    """A compiler by name (built-in, registered or an installed entry point) or instance."""
    if isinstance(compiler, Compiler):
        return compiler
    if isinstance(compiler, str):
        from ..plugins import COMPILERS
        return COMPILERS.get(compiler)
    raise TypeError(f"compiler must be a name or a Compiler instance, got {compiler!r}")


def check_options(compiler: Compiler, opts: dict) -> None:
    unknown = sorted(set(opts) - set(compiler.options))
    if unknown:
        raise ValueError(f"unknown option{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(repr(u) for u in unknown)} for compiler {compiler.name!r}: "
                         f"expected one of {sorted(compiler.options) or 'no options'}")


def _evaluator():
    from ..backends.evaluator import Evaluator
    return Evaluator()


def _exla():
    from ..backends.exla.compiler import ExlaCompiler
    return ExlaCompiler()


register_compiler_factory("evaluator", _evaluator)
register_compiler_factory("exla", _exla)
