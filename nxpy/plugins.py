"""Plugin registries: backends and compilers by name, from built-ins, ``register_*`` calls
and Python entry points (groups ``nxpy.backends`` and ``nxpy.compilers``).

Every name remembers where it came from, so two plugins claiming one name, or an entry
point that fails to import, produce an error naming both sides. A plugin missing a
required method is reported (plugin and method named) when it is registered, or, for a
class or factory, when it is first instantiated.

>>> import nxpy as nx
>>> "numpy" in nx.plugins.BACKENDS.names() and "exla" in nx.plugins.COMPILERS.names()
True
"""
from __future__ import annotations

import inspect
from importlib import metadata

__all__ = ["PluginError", "Registry", "BACKENDS", "COMPILERS", "register_backend",
           "register_compiler"]


class PluginError(RuntimeError):
    """A plugin could not be registered or loaded."""


def _origin_of_call():
    for frame in inspect.stack()[2:]:
        mod = frame.frame.f_globals.get("__name__", "")
        if not mod.startswith("nxpy.plugins"):
            return f"registered at {frame.filename}:{frame.lineno}"
    return "registered"


class Registry:
    """Name → plugin, for one kind (``backend`` or ``compiler``)."""

    def __init__(self, kind, group, base_path, required, describe):
        self.kind, self.group = kind, group
        self._base_path = base_path        # "nxpy.backend:Backend", imported lazily
        self.required = required           # method names a plugin must implement
        self._describe = describe
        self._entries: dict = {}           # name -> (factory, origin)
        self._instances: dict = {}

    @property
    def base(self):
        mod, _, cls = self._base_path.partition(":")
        return getattr(__import__(mod, fromlist=[cls]), cls)

    # --- registration ----------------------------------------------------------------------
    def register(self, name, plugin, *, origin=None, replace=False):
        """``plugin``: an instance, a class (instantiated on first use) or a zero-argument
        factory. Instances are checked now."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        origin = origin or _origin_of_call()
        if name in self._entries and not replace:
            raise PluginError(
                f"two {self.kind} plugins are named {name!r}: {self._entries[name][1]}, and "
                f"{origin}; rename one of them (or pass replace=True to override)")
        if isinstance(plugin, self.base) or (not callable(plugin) and not isinstance(plugin, type)):
            self.check(name, plugin)
            instance = plugin
            factory = lambda: instance  # noqa: E731
        else:
            factory = plugin
        self._entries[name] = (factory, origin)
        self._instances.pop(name, None)

    def unregister(self, name):
        """Forgets ``name`` (tests, and plugins that are unloaded)."""
        self._entries.pop(name, None)
        self._instances.pop(name, None)

    def check(self, name, obj):
        """Raises PluginError naming the plugin and the first missing required method."""
        base = self.base
        for m in self.required:
            impl = getattr(type(obj), m, None) or getattr(obj, m, None)
            if impl is None or not callable(impl) or impl is getattr(base, m, None):
                raise PluginError(
                    f"{self.kind} plugin {name!r} ({type(obj).__module__}.{type(obj).__qualname__}) "
                    f"does not implement the required method {m!r}; {self._describe}")
        if self.kind == "compiler":
            opts = getattr(obj, "options", None)
            if opts is None or isinstance(opts, str) or not all(isinstance(o, str) for o in opts):
                raise PluginError(f"compiler plugin {name!r} must declare `options`, a set of the "
                                  f"option names it accepts (an empty frozenset if none)")

    # --- lookup ----------------------------------------------------------------------------
    def _entry_points(self):
        return list(metadata.entry_points(group=self.group))

    def _discover(self, name):
        eps = [ep for ep in self._entry_points() if ep.name == name]
        if not eps:
            return False
        if len(eps) > 1:
            who = " and ".join(f"entry point {ep.value!r} of {_dist(ep)}" for ep in eps)
            raise PluginError(f"two {self.kind} plugins are named {name!r}: {who}; uninstall "
                              f"one of them")
        ep = eps[0]
        where = f"entry point {ep.value!r} of {_dist(ep)}"
        try:
            obj = ep.load()
        except Exception as e:
            raise PluginError(f"the {self.kind} plugin {name!r} ({where}) failed to import: "
                              f"{type(e).__name__}: {e}") from e
        self.register(name, obj, origin=where)
        return True

    def get(self, name):
        inst = self._instances.get(name)
        if inst is not None:
            return inst
        if name not in self._entries and not self._discover(name):
            raise ValueError(f"unknown {self.kind} {name!r}: expected one of {self.names()} or "
                             f"a {self.base.__name__} instance")
        self._check_entry_point_clash(name)
        factory, origin = self._entries[name]
        obj = factory()
        self.check(name, obj)
        self._instances[name] = obj
        return obj

    def _check_entry_point_clash(self, name):
        origin = self._entries[name][1]
        for ep in self._entry_points():
            if ep.name == name and ep.value not in origin:
                raise PluginError(
                    f"two {self.kind} plugins are named {name!r}: {origin}, and entry point "
                    f"{ep.value!r} of {_dist(ep)}; rename or uninstall one of them")

    def names(self) -> list[str]:
        """Registered names and installed entry points (not imported)."""
        return sorted(set(self._entries) | {ep.name for ep in self._entry_points()})

    def origin(self, name) -> str:
        if name not in self._entries:
            self._discover(name)
        return self._entries[name][1]


def _dist(ep):
    d = getattr(ep, "dist", None)
    return f"distribution {d.name} {d.version}" if d is not None else "an unknown distribution"


BACKENDS = Registry("backend", "nxpy.backends", "nxpy.backend:Backend",
                    ("from_numpy", "to_numpy", "constant"),
                    "a Backend implements from_numpy, to_numpy and constant, plus the ops it "
                    "supports (see nxpy.backends.Backend and docs/plugins.md)")
COMPILERS = Registry("compiler", "nxpy.compilers", "nxpy.defn.compiler:Compiler", ("compile",),
                     "a Compiler implements compile(graph, opts) (see nxpy.defn.Compiler and "
                     "docs/plugins.md)")


def register_backend(name, backend, *, replace=False):
    """Makes ``backend`` (an instance, a Backend subclass or a factory) usable by name:
    ``nx.default_backend(name)``, ``nx.tensor(..., backend=name)``, the conformance kit."""
    BACKENDS.register(name, backend, replace=replace, origin=_origin_of_call())


def register_compiler(name, compiler, *, replace=False):
    """Makes ``compiler`` (an instance, a Compiler subclass or a factory) usable by name:
    ``jit(f, compiler=name)``, ``@defn(compiler=name)``, ``shard_jit``, the kit."""
    COMPILERS.register(name, compiler, replace=replace, origin=_origin_of_call())
