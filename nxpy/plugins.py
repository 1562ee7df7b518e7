"""Plugins: backends and compilers found by name, from built-ins, ``register_*`` calls
and Python entry points (groups ``nxpy.backends`` and ``nxpy.compilers``).

Every name remembers where it came from, so two plugins claiming one name, or an entry
point that fails to import, produce an error naming both sides. A plugin missing a
required method is reported (plugin and method named) when it is registered, or, for a
class or factory, when it is first instantiated. The registries live with their
protocols (:mod:`nxpy.backend`, :mod:`nxpy.defn.compiler`); this module gathers them.

>>> import nxpy as nx
>>> "numpy" in nx.plugins.BACKENDS.names() and "exla" in nx.plugins.COMPILERS.names()
True
"""
from __future__ import annotations

from .backend import BACKENDS, register_backend
from .defn.compiler import COMPILERS, register_compiler
from .registry import PluginError, Registry

__all__ = ["PluginError", "Registry", "BACKENDS", "COMPILERS", "register_backend",
           "register_compiler"]
