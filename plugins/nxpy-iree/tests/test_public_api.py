"""The plugin uses only nxpy's public API: every import of its modules (and of these
tests) is read from the source, and any nxpy module outside the public ones, or any
private name (a leading underscore), fails."""
import ast
from pathlib import Path

import pytest

import nxpy
import nxpy.defn
import nxpy.extend
import nxpy.plugins
import nxpy.linalg
import nxpy.random
import nxpy.testing
import nxpy.testing.fuzz

PLUGIN = Path(__file__).resolve().parents[1]
PUBLIC = {"nxpy": nxpy, "nxpy.extend": nxpy.extend, "nxpy.plugins": nxpy.plugins,
          "nxpy.defn": nxpy.defn, "nxpy.testing": nxpy.testing,
          # the user-facing namespaces the tests call (Nx.LinAlg, Nx.Random)
          "nxpy.linalg": nxpy.linalg, "nxpy.random": nxpy.random,
          "nxpy.testing.fuzz": nxpy.testing.fuzz}  # the fuzzer (docs/fuzzing.md)
FILES = sorted(p for d in ("nxpy_iree", "tests") for p in (PLUGIN / d).rglob("*.py"))


def nxpy_uses(tree):
    """(module, name or None, line) for each import of nxpy and each attribute read off an
    imported nxpy module (``nx.foo``)."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "nxpy":
                    yield a.name, None, node.lineno
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module and (
                node.module.split(".")[0] == "nxpy") and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                if sub in PUBLIC:
                    yield sub, None, node.lineno
                    aliases[a.asname or a.name] = sub
                else:
                    yield node.module, a.name, node.lineno
    for node in ast.walk(tree):  # nx.a.b.c: each step off a public module
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if not (isinstance(node, ast.Name) and node.id in aliases):
            continue
        module = aliases[node.id]
        for name in reversed(chain):
            if f"{module}.{name}" in PUBLIC:
                module = f"{module}.{name}"
                continue
            yield module, name, node.lineno
            break

def _is_module(obj):
    return type(obj).__name__ == "module"


def violations(path):
    out = []
    for module, name, line in sorted(set(nxpy_uses(ast.parse(path.read_text(), str(path)))),
                                     key=str):
        where = f"{path.relative_to(PLUGIN)}:{line}"
        if module not in PUBLIC:
            out.append(f"{where}: imports {module}, not a public module "
                       f"({', '.join(sorted(PUBLIC))})")
        elif name is not None and (name.startswith("_") or not hasattr(PUBLIC[module], name)
                                   or _is_module(getattr(PUBLIC[module], name))):
            out.append(f"{where}: {module}.{name} is private, not in {module}, or a module "
                       f"that is not public")
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PLUGIN)))
def test_only_public_nxpy_names(path):
    assert violations(path) == []


def test_the_check_catches_private_names(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import nxpy as nx\nfrom nxpy.compilers.exla.mlir import Builder\n"
                   "from nxpy.extend import lower_stablehlo, _private\nnx._context\n"
                   "import nxpy.ops.core\nnx.defn.tracing.expansions\nnx.defn.jit\n")
    global PLUGIN
    old, PLUGIN = PLUGIN, tmp_path
    try:
        found = violations(bad)
    finally:
        PLUGIN = old
    assert sorted(v.split(": ", 1)[1].split(",")[0] for v in found) == [
        "imports nxpy.compilers.exla.mlir", "imports nxpy.ops.core", "nxpy._context is private",
        "nxpy.defn.tracing is private", "nxpy.extend._private is private"]
