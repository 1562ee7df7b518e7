"""Backends (eager op sets) and compilers that ship with nxpy."""
from ..backend import Backend

__all__ = ["Backend"]
