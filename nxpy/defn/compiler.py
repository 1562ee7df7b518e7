"""The Compiler protocol, compiler registry and option handling.

A compiler turns a traced :class:`~nxpy.defn.expr.Fn` (the graph) into an executable:
a callable taking the flat list of argument tensors and returning the flat list of
results. ``defn`` does the tracing and the caching; a compiler never sees a Python
function, only graphs, so every compiler runs the same program.
"""
from __future__ import annotations

from ..backend import default_backend
from ..registry import PluginError, Registry

__all__ = ["Compiler", "COMPILERS", "get_compiler", "register_compiler",
           "register_compiler_factory", "check_options", "compile_graph", "compile_graph_sharded"]


class Compiler:
    """The compiler protocol (as Nx's ``Nx.Defn.Compiler``). Subclass it, or write any
    class with these members, and register it with :func:`nxpy.register_compiler` or the
    ``nxpy.compilers`` entry point group.

    ``name``
        The name users pass as ``compiler=``.
    ``options``
        The option names the compiler accepts (a set of str). Any other option given to
        ``jit``/``defn``/``compile`` is an error raised before compiling. By convention
        ``device_id`` selects one of several devices (EXLA: the XLA device index).
    ``compile(graph, opts) -> run``  (required)
        Trace-and-run and ahead-of-time compilation both come here: ``defn`` traces the
        function once per argument templates and hands over the graph (an
        :class:`~nxpy.defn.expr.Fn`: ``graph.params`` are the parameter templates,
        ``graph.nodes`` the Expr nodes in topological order, ``graph.outputs`` the results)
        and caches what ``compile`` returns. ``run(args: list[Tensor]) -> list[Tensor]``
        gets tensors of the parameters' shapes and types (of any backend: move them where
        needed) and returns one tensor per output.
    ``run.copies_inputs``  (optional attribute of ``run``)
        True when ``run`` never returns memory of its argument tensors (its results are
        fresh buffers): ``defn`` then hands it a caller's NumPy arrays without copying
        them first.
    ``run.takes_arrays``  (optional attribute of ``run``)
        True when ``run`` also accepts, in place of a tensor, a NumPy array of the
        parameter's shape and dtype (with default names): ``defn``'s call path then passes
        a caller's arrays as they are, without wrapping them in tensors.
    ``run.call``, ``run.call_arrays``  (optional attributes of ``run``)
        The call path of a compiled program, for speed: ``call(args)`` takes the
        positional argument tensors (their templates checked by ``defn``) and returns
        the whole result, structured as ``graph.tree`` says (a single tensor, a tuple,
        a map...); ``call_arrays(arrays)`` the same for calls whose every argument is a
        NumPy array of the parameter's shape and dtype (None: not supported). Without
        them ``defn`` calls ``run`` and builds the result itself.
    ``run.memory_stats() -> dict``  (optional attribute of ``run``)
        The device memory the compiled program reserves, in bytes, per device:
        ``argument``, ``output``, ``alias`` (outputs written in place of donated
        arguments), ``temp`` (what the program allocates while it runs) and
        ``generated_code``; what :meth:`nxpy.defn.Compiled.memory_stats` returns. EXLA
        reads XLA's buffer assignment (as ``jax``'s ``compiled.memory_analysis()``).
    ``result_backend(opts) -> Backend``  (optional)
        The backend the results live on (default: the default backend).
    ``compile_sharded(graph, mesh, in_shardings, out_shardings, propagator, opts)``  (optional)
        The sharded entry point used by ``shard_jit`` and by ``jit`` on sharded tensors:
        returns ``(run, module_or_None)`` where ``run(per_device_args) ->
        per_device_results`` (lists indexed by this process's partitions). The shardings
        are one :class:`~nxpy.NamedSharding` per argument and result leaf (its arithmetic
        of shards: ``local_shape``, ``shard_array``, ``unshard``, ...); ``propagator``
        gives the layout of every value of the graph (``propagator.layout(x)``).
        Optionally ``run.call_global(leaves) ->
        results`` takes global tensors (each sharded as ``in_shardings`` says, or not
        sharded: replicated onto the mesh) and returns sharded tensors, with no split into
        per-device lists. Without ``compile_sharded``, ``shard_jit`` and sharded calls
        refuse the compiler with a clear error.
    ``supports(op) -> bool``  (optional)
        Whether the compiler runs built-in op ``op`` natively. Ops that have a portable
        implementation (``nxpy.ops.core.PORTABLE``: the linear-algebra primitives) and that
        the compiler does not support are traced as that composition of other ops, so the
        compiler never sees them. A compiler without ``supports`` gets every such op
        expanded (see ``docs/linalg.md``).

    A compiler that consumes StableHLO (not XLA through PJRT) gets a graph's module from
    ``nxpy.extend.lower_stablehlo(graph, custom_calls=False)``: nxpy's own lowering,
    with no XLA custom call in it (``docs/plugins.md``, the IREE plugin); one whose
    ``stablehlo.sort`` is not stable also passes ``stable_sort=False`` (sorts and
    ``top_k`` in a form whose order is unique).
    """

    name = "compiler"
    options: frozenset = frozenset()

    def compile(self, graph, opts):  # pragma: no cover - protocol
        raise NotImplementedError

    def result_backend(self, opts):
        return default_backend()

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r}>"


def _plugin_name(comp) -> str:
    cls = type(comp)
    return f"compiler {getattr(comp, 'name', '?')!r} ({cls.__module__}.{cls.__qualname__})"


def compile_graph(comp, graph, opts):
    """``comp.compile(graph, opts)``, checked: a result that is not callable is a
    PluginError naming the compiler (rather than a TypeError at the first call)."""
    run = comp.compile(graph, opts)
    if not callable(run):
        raise PluginError(f"{_plugin_name(comp)}: compile() returned {type(run).__name__} "
                          f"{run!r:.60}, expected a callable run(args) -> results")
    return run


def compile_graph_sharded(comp, graph, mesh, in_sh, out_sh, propagator, opts):
    """``comp.compile_sharded(...)``, checked as :func:`compile_graph` checks compile."""
    result = comp.compile_sharded(graph, mesh, in_sh, out_sh, propagator, opts)
    if not (isinstance(result, tuple) and len(result) == 2 and callable(result[0])):
        raise PluginError(f"{_plugin_name(comp)}: compile_sharded() returned {result!r:.60}, "
                          f"expected a pair (run, module or None) with a callable run")
    return result


def _check_options_declared(name, obj):
    opts = getattr(obj, "options", None)
    if opts is None or isinstance(opts, str) or not all(isinstance(o, str) for o in opts):
        raise PluginError(f"compiler plugin {name!r} must declare `options`, a set of the "
                          f"option names it accepts (an empty frozenset if none)")


#: compilers by name: built-ins, register_compiler calls, entry points (group nxpy.compilers)
COMPILERS = Registry("compiler", "nxpy.compilers", Compiler, ("compile",),
                     "a Compiler implements compile(graph, opts) (see nxpy.defn.Compiler and "
                     "docs/plugins.md)", validate=_check_options_declared)


def register_compiler(name, compiler, *, replace=False):
    """Makes ``compiler`` (an instance, a Compiler subclass or a factory) usable by name:
    ``jit(f, compiler=name)``, ``@defn(compiler=name)``, ``shard_jit``, the kit."""
    COMPILERS.register(name, compiler, replace=replace)


def register_compiler_factory(name, factory):
    """Registers a built-in compiler (plugins use :func:`register_compiler`)."""
    COMPILERS.register(name, factory, origin="built into nxpy", replace=True)


def get_compiler(compiler) -> Compiler:
    """A compiler by name (built-in, registered or an installed entry point) or instance."""
    if isinstance(compiler, Compiler):
        return compiler
    if isinstance(compiler, str):
        return COMPILERS.get(compiler)
    raise TypeError(f"compiler must be a name or a Compiler instance, got {compiler!r}")


def check_options(compiler: Compiler, opts: dict) -> None:
    unknown = sorted(set(opts) - set(compiler.options))
    if unknown:
        raise ValueError(f"unknown option{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(repr(u) for u in unknown)} for compiler {compiler.name!r}: "
                         f"expected one of {sorted(compiler.options) or 'no options'}")
