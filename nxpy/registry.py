"""The registry mechanism behind plugins: names → backends or compilers, from built-ins,
``register_*`` calls and Python entry points. The two registries themselves live with
their protocols (:data:`nxpy.backend.BACKENDS`, :data:`nxpy.defn.compiler.COMPILERS`).

Every name remembers where it came from, so two plugins claiming one name, or an entry
point that fails to import, produce an error naming both sides. A plugin missing a
required method is reported (plugin and method named) when it is registered, or, for a
class or factory, when it is first instantiated.

>>> class Greeter:                      # a protocol: plugins must implement hello
...     def hello(self): raise NotImplementedError
>>> class Plain(Greeter):
...     def hello(self): return "hi"
>>> r = Registry("greeter", "no.such.group", Greeter, ("hello",), "a greeter says hello")
>>> r.register("plain", Plain)           # a class: instantiated on first use
>>> r.get("plain").hello(), r.names()
('hi', ['plain'])
>>> r.register("mute", Greeter())  # an instance: checked now  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
nxpy.registry.PluginError: greeter plugin 'mute' (nxpy.registry.Greeter) does not implement
the required method 'hello'; a greeter says hello
"""
from __future__ import annotations

import inspect
from importlib import metadata

__all__ = ["PluginError", "Registry", "rule_registrar"]


class PluginError(RuntimeError):
    """A plugin could not be registered or loaded."""


#: modules whose frames are the registration machinery, not the caller that registers
_MACHINERY = {__name__, "nxpy.backend", "nxpy.defn.compiler", "nxpy.plugins"}


def _origin_of_call():
    for frame in inspect.stack()[2:]:
        mod = frame.frame.f_globals.get("__name__", "")
        if mod not in _MACHINERY:
            return f"registered at {frame.filename}:{frame.lineno}"
    return "registered"


class Registry:
    """Name → plugin, for one kind (``backend`` or ``compiler``)."""

    def __init__(self, kind, group, base, required, describe, validate=None):
        self.kind, self.group = kind, group
        self.base = base                   # the protocol class (Backend, Compiler)
        self._validate = validate          # more checks of an instance, raising PluginError
        self.required = required           # method names a plugin must implement
        self._describe = describe
        self._entries: dict = {}           # name -> (factory, origin)
        self._instances: dict = {}

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
            def factory():
                return instance
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
                cls = type(obj)
                raise PluginError(
                    f"{self.kind} plugin {name!r} ({cls.__module__}.{cls.__qualname__}) "
                    f"does not implement the required method {m!r}; {self._describe}")
        if self._validate is not None:
            self._validate(name, obj)

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


def rule_registrar(table: dict, name: str, what: str, doc: str):
    """A decorator factory ``register(*ops)`` that stores the decorated rule in ``table``
    under each op name (the rule tables of lowering, evaluation, sharding, ... all work
    this way; a later registration overrides an earlier one).

    >>> RULES = {}
    >>> register = rule_registrar(RULES, "register", "a doc rule", "Registers a doc rule.")
    >>> @register("add", "subtract")
    ... def _(x): return x
    >>> sorted(RULES)
    ['add', 'subtract']
    >>> @register
    ... def oops(x): return x
    Traceback (most recent call last):
    ...
    TypeError: register a doc rule with the op names first: @register("op", ...), got oops
    """
    def register(*ops):
        if not ops or not all(isinstance(op, str) and op for op in ops):
            got = ", ".join(getattr(op, "__name__", repr(op)) for op in ops) or "nothing"
            raise TypeError(f"register {what} with the op names first: "
                            f"@{register.__name__}(\"op\", ...), got {got}")

        def deco(rule):
            for op in ops:
                table[op] = rule
            return rule
        return deco
    register.__name__ = register.__qualname__ = name
    register.__doc__ = doc
    return register
