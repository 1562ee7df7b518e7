"""The package's layering, as docs/architecture.md draws it, checked import by import:
every module of nxpy/ belongs to one layer of the table there; no module imports one of a
higher layer; no import circle, of any length; no import of nxpy inside a function; no
import of jax or jaxlib outside the package nxpy/pjrt/.

Run this file directly to print each module's layer and the nxpy modules it imports."""
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "nxpy"
DOC = ROOT / "docs" / "architecture.md"


def layer_table() -> list[tuple[int, str, list[str]]]:
    """``(layer, name, [path prefixes])`` from the table of docs/architecture.md."""
    rows = []
    for line in DOC.read_text().splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|([^|]*)\|", line)
        if m:
            rows.append((int(m[1]), m[2], re.findall(r"`(nxpy/[^`]*)`", m[3])))
    return rows


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))
            if "build" not in p.parts}


def layer_of(path: Path, table) -> int | None:
    rel = path.relative_to(ROOT).as_posix()
    hits = [(len(prefix), layer) for layer, _, prefixes in table for prefix in prefixes
            if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix))]
    return max(hits)[1] if hits else None


def _resolve(mod: str, path: Path, node: ast.ImportFrom | ast.Import, known) -> list[str]:
    """The nxpy modules an import statement loads (a submodule when the name is one)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "nxpy"]
    if node.level:
        pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        base = ".".join(pkg[:len(pkg) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    if base.split(".")[0] != "nxpy":
        return []
    out = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        out.append(sub if sub in known else base)
    return out


def imports(known) -> dict[str, list[tuple[str, int, bool]]]:
    """module → [(imported module, line, inside a function)]."""
    out = {}
    for mod, path in known.items():
        tree = ast.parse(path.read_text())
        local = {id(n) for f in ast.walk(tree)
                 if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(f)}
        edges = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(mod, path, node, known):
                    if target != mod:
                        edges.append((target, node.lineno, id(node) in local))
        out[mod] = edges
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


TABLE = layer_table()
KNOWN = modules()
IMPORTS = imports(KNOWN)


def test_the_doc_has_the_layer_table():
    assert [layer for layer, _, _ in TABLE] == list(range(1, len(TABLE) + 1)) and len(TABLE) >= 7


def test_every_module_has_a_layer():
    missing = [m for m, p in KNOWN.items() if layer_of(p, TABLE) is None]
    assert not missing, f"modules in no layer of docs/architecture.md: {missing}"


def test_no_module_imports_a_higher_layer():
    bad = []
    for mod, edges in IMPORTS.items():
        mine = layer_of(KNOWN[mod], TABLE)
        for target, line, _ in edges:
            theirs = layer_of(KNOWN[target], TABLE) if target in KNOWN else None
            if theirs is not None and mine is not None and theirs > mine:
                bad.append(f"{KNOWN[mod].relative_to(ROOT)}:{line}: {mod} (layer {mine}) "
                           f"imports {target} (layer {theirs})")
    assert not bad, "imports that run up the layers:\n" + "\n".join(bad)


def test_no_import_circles():
    graph = {m: {t for t, _, _ in edges if t in KNOWN} for m, edges in IMPORTS.items()}
    assert not _cycles(graph), f"import circles: {_cycles(graph)}"


def test_no_nxpy_import_inside_a_function():
    bad = [f"{KNOWN[m].relative_to(ROOT)}:{line}: imports {t} inside a function"
           for m, edges in IMPORTS.items() for t, line, local in edges if local]
    assert not bad, "\n".join(bad)


def jax_imports(path: Path) -> list[tuple[str, int]]:
    """``(module, line)`` for each import of jax or jaxlib in ``path`` (anywhere in it)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        out += [(n, node.lineno) for n in names if n.split(".")[0] in ("jax", "jaxlib")]
    return out


def test_only_the_pjrt_package_imports_jaxlib():
    """Every jaxlib call lives in the package nxpy/pjrt/ (version-checked there): no other
    module of nxpy imports jax or jaxlib, at the top or inside a function."""
    pjrt = PACKAGE / "pjrt"
    assert (pjrt / "__init__.py").is_file() and jax_imports(pjrt / "lib.py")
    bad = [f"{p.relative_to(ROOT)}:{line}: imports {name}" for p in KNOWN.values()
           if pjrt not in p.parents for name, line in jax_imports(p)]
    assert not bad, "jax/jaxlib imported outside nxpy/pjrt/:\n" + "\n".join(bad)


def test_the_checker_sees_violations(tmp_path):
    """The checks above are only as good as the import reading: it must see both forms
    of relative import, package-relative names and function-local imports."""
    pkg = {"nxpy.a": Path("nxpy/a.py"), "nxpy.b": Path("nxpy/b/__init__.py"),
           "nxpy.b.c": Path("nxpy/b/c.py")}
    src = "from . import a\nfrom .b import c\ndef f():\n    from .b.c import x\n"
    tree = ast.parse(src)
    got = [t for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
           for t in _resolve("nxpy.z", Path("nxpy/z.py"), n, pkg)]
    assert got == ["nxpy.a", "nxpy.b.c", "nxpy.b.c"]
    got = [t for n in ast.walk(ast.parse("from .. import a\nfrom . import c\n"))
           for t in (_resolve("nxpy.b", Path("nxpy/b/__init__.py"), n, pkg)
                     if isinstance(n, ast.ImportFrom) else [])]
    assert got == ["nxpy.a", "nxpy.b.c"]  # relative to the package nxpy/b/__init__.py is
    assert _cycles({"x": {"y"}, "y": {"z"}, "z": {"x"}, "w": {"x"}}) == [["x", "y", "z"]]


if __name__ == "__main__":
    for mod, path in KNOWN.items():
        targets = sorted({t for t, _, _ in IMPORTS[mod]})
        print(f"{layer_of(path, TABLE)}  {mod}: {', '.join(targets)}")
