"""JAX's sharding tutorials as a corpus (issue 45's acceptance): examples taken from JAX's own
documentation, each kept as JAX writes it, run once with JAX and once ported to nxpy, the
port changing only the names (:func:`port`: ``jax``/``jnp``/``jax.lax`` → ``nx``/``xnp``/
nxpy's collectives, the import lines to match). JAX is the oracle: the values the example
computes, the ``.sharding`` of the arrays it shows, and what it prints where that is not an
array (nxpy prints tensors as Nx does).

The examples come from the JAX repository (https://github.com/jax-ml/jax, Apache-2.0,
Copyright The JAX Authors), each module naming its file, the commit it was read at and, per
example, the section. The pages removed from JAX's docs in 2026 (sharded-computation,
Distributed arrays and automatic parallelization, explicit-sharding) are read at the commit
before their removal.

An example that cannot run in nxpy yet is a strict xfail naming the construct it misses and
the item of issue 45 that builds it ("issue 45 item N: ..."), so that it fails when the item
lands and its mark must go; one that fails for another reason says "not in issue 45: ...".
Where a line of an example uses an API that stays different on purpose (nxpy.random is
Nx.Random's API), the port replaces that line, and :attr:`Example.deviations` says so.
"""
from __future__ import annotations

import ast
import contextlib
import io
import linecache
import re
import sys
import textwrap
import types
from dataclasses import dataclass, field

import numpy as np

import nxpy as nx

import jax


# ----------------------------------------------------------------------------------------
# The port: JAX's names → nxpy's
# ----------------------------------------------------------------------------------------
#: ``jax.X`` / ``jax.lax.X`` whose nxpy spelling is ``X`` imported from ``nxpy.defn``
DEFN = {
    # transforms and entry points (jax.X)
    "jit", "grad", "value_and_grad", "vmap", "shard_map", "remat", "checkpoint", "jvp",
    "linearize", "jacfwd", "jacrev", "hessian", "custom_jvp", "custom_vjp",
    # jax.lax's collectives, control flow and sharding constraint
    "psum", "pmean", "pmax", "pmin", "all_gather", "all_gather_invariant", "psum_scatter",
    "ppermute", "all_to_all", "axis_index", "axis_size", "pcast", "pvary",
    "with_sharding_constraint", "scan", "cond", "fori_loop", "while_loop", "map",
}
#: the rest of the names whose nxpy spelling is not ``nx.`` + JAX's (longest prefix wins)
NAMES = {
    "jax.numpy": "xnp",
    "jnp": "xnp",
    "jax.Array": "nx.Tensor",
    "jax.sharding": "nx",
    "jax.debug.visualize_array_sharding": "nx.visualize_sharding",
    "jax.devices": "nx.pjrt.devices",
    "jax.local_devices": "nx.pjrt.local_devices",
    "jax.device_count": "nx.pjrt.device_count",
    "jax.process_count": "nx.distributed.process_count",
    "jax.process_index": "nx.distributed.process_index",
    "jax.make_array_from_process_local_data": "nx.distributed.make_array_from_process_local_data",
    "jax.tree_util": "jax.tree_util",       # pytree utilities: JAX's own, on nxpy tensors too
    "jax.tree": "jax.tree",
    "lax.dynamic_slice_in_dim": "nx.slice_along_axis",   # (x, start, size, axis): Nx's name
    "jax.lax.dynamic_slice_in_dim": "nx.slice_along_axis",
}
#: names ``from jax.sharding import ...`` takes that nxpy has at its top level
_DOTTED = re.compile(r"(?<![\w.])(jax|jnp|lax)((?:\.\w+)*)")
_IMPORT_FROM = re.compile(r"^(\s*)from (jax(?:\.\w+)*) import (.+)$")
_IMPORT = re.compile(r"^(\s*)import (jax(?:\.\w+)*)(?: as (\w+))?\s*$")


def _rename(dotted: str, used: set) -> str:
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in NAMES:
            return ".".join([NAMES[head], *parts[n:]])
    if parts[0] in ("jax", "lax") and len(parts) >= 2:
        rest = parts[2:] if parts[:2] == ["jax", "lax"] else parts[1:]
        if rest and rest[0] in DEFN:
            used.add(rest[0])
            return ".".join(rest)
        if parts[0] == "lax" or parts[:2] == ["jax", "lax"]:
            return ".".join(["nx", *rest])      # jax.lax's other ops: nxpy's front end
        return ".".join(["nx", *parts[1:]])
    return {"jax": "nx", "lax": "nx"}.get(dotted, dotted)


def _import_names(names: str) -> list[tuple[str, str]]:
    """``"A, B as C"`` → ``[("A", "A"), ("B", "C")]``."""
    out = []
    for item in names.split(","):
        name, _, alias = item.strip().partition(" as ")
        out.append((name.strip(), (alias or name).strip()))
    return out


def port(code: str) -> str:
    """JAX's ``code`` in nxpy's names: ``import jax`` → ``import nxpy as nx`` (and
    ``from nxpy.defn import`` the transforms and collectives the code names), ``jnp`` →
    ``xnp`` (``nxpy.numpy``), ``jax.lax.psum`` → ``psum``, ``jax.X`` → ``nx.X`` but
    :data:`NAMES`; the rest verbatim.

    >>> print(port("import jax\\nfrom jax.sharding import PartitionSpec as P\\n"
    ...            "y = jax.lax.psum(jnp.sin(x), 'i')"))
    import nxpy as nx
    from nxpy.defn import psum
    from nxpy import PartitionSpec as P
    y = psum(xnp.sin(x), 'i')
    """
    used: set = set()
    lines = []
    for line in code.splitlines():
        m_from, m_imp = _IMPORT_FROM.match(line), _IMPORT.match(line)
        if m_imp:
            ind, mod, alias = m_imp.groups()
            if mod == "jax" and alias is None:
                lines.append(f"{ind}import nxpy as nx")
                lines.append(f"{ind}<DEFN>")
            elif mod == "jax.numpy":
                lines.append(f"{ind}import nxpy.numpy as {'xnp' if alias == 'jnp' else alias}")
            else:
                as_ = f" as {alias}" if alias else ""
                lines.append(f"{ind}import {_rename(mod, used)}{as_}")
            continue
        if m_from:
            ind, mod, names = m_from.groups()
            pairs = _import_names(names)
            if mod == "jax" and all(n in ("lax", "numpy") for n, _ in pairs):
                lines.extend(f"{ind}import nxpy.numpy as xnp" for n, a in pairs if n == "numpy")
                continue
            if mod in ("jax.lax", "jax.experimental.shard_map") or (
                    mod == "jax" and all(n in DEFN for n, _ in pairs)):
                lines.append(f"{ind}from nxpy.defn import {names}")
                continue
            if mod.startswith("jax.tree_util"):
                lines.append(line)
                continue
            target = _rename(mod, used)
            if mod in ("jax", "jax.sharding"):
                target = "nxpy"
            lines.append(f"{ind}from {target.replace('nx.', 'nxpy.')} import {names}")
            continue
        if re.match(r"\s*jax\.config\.update\(", line):
            continue                            # the test session configures the devices
        lines.append(_DOTTED.sub(lambda m: _rename(m.group(0), used), line))
    defn = f"from nxpy.defn import {', '.join(sorted(used))}" if used else ""
    text = "\n".join(lines)
    text = re.sub(r"^(\s*)<DEFN>\n", lambda m: f"{m.group(1)}{defn}\n" if defn else "", text,
                  flags=re.M)
    if "jax." in _strip_strings(text) and not re.search(r"^\s*import jax\s*$", text, re.M):
        text = "import jax  # pytree utilities\n" + text
    return text


def _strip_strings(text: str) -> str:
    return re.sub(r"(#.*$)|('[^'\n]*'|\"[^\"\n]*\")", "", text, flags=re.M)


# ----------------------------------------------------------------------------------------
# What nxpy misses today, by the item of issue 45 that builds it
# ----------------------------------------------------------------------------------------
#: construct → the item of issue 45 that builds it (0: named in the issue, in no item)
ITEMS = {
    "make_mesh": 1,
    "set_mesh": 1,
    "a bare P with the mesh from context": 1,
    "Mesh(devices, axis_names)": 1,
    "make_array_from_process_local_data(P(...), ...)": 1,
    "shard_map with the mesh from context": 2,
    "shard_map inferring in_specs": 2,
    "shard_map as a decorator (no function)": 2,
    "all_gather(x, axis_name, axis=, tiled=)": 3,
    "axis_size": 3,
    "mesh.shape as a mapping": 3,
    "cond with operands": 3,
    "AxisType": 4,
    "typeof": 4,
    "out_sharding=": 4,
    "reshard": 4,
    "auto_axes/explicit_axes": 4,
    "get_abstract_mesh": 4,
    "pcast": 4,
    "the explicit-mode errors": 4,
    "P(..., unreduced=)": 4,
    "visualize_sharding": 5,
    "SingleDeviceSharding (.sharding of an unplaced array)": 0,
    ".devices()": 0,
}


def missing(*constructs: str) -> str:
    """The xfail reason of an example that needs ``constructs`` (keys of :data:`ITEMS`):
    ``"issue 45 items 1, 2: make_mesh; shard_map ..."``."""
    items = sorted({ITEMS[c] for c in constructs})
    named = ", ".join("the issue's list" if i == 0 else str(i) for i in items)
    return f"issue 45 item{'s' if len(items) > 1 else ''} {named}: {'; '.join(constructs)}"


# ----------------------------------------------------------------------------------------
# Examples
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Example:
    """One example of a tutorial. ``code`` is JAX's text (the tutorial's import lines and
    the blocks it builds on first; a last expression, which the notebook shows, is kept
    as ``_``); after it runs in both namespaces, ``values`` names the variables whose
    values (pytrees of arrays, their shapes and dtypes) must equal JAX's, ``shardings``
    those whose ``.sharding`` (mesh axes and sizes, spec, which device holds which block)
    must, ``pictures`` those ``nx.visualize_sharding`` must draw with JAX's block
    boundaries and device ids, ``absent`` those neither may define (a ``try`` whose body
    must raise). ``stdout``: what it prints must be JAX's ``"text"`` (shapes, types,
    booleans, messages), or its ``"numbers"`` within the tolerances (printed arrays:
    nxpy prints tensors as Nx does), or merely ``"some"`` text in both (a message)."""
    name: str
    where: str
    code: str
    values: tuple = ()
    shardings: tuple = ()
    pictures: tuple = ()
    absent: tuple = ()
    stdout: str = ""
    xfail: str = ""
    #: ``(nxpy text, replacement, why)``: a line of the port replaced, where nxpy's API
    #: stays different from JAX's on purpose (applied after :func:`port`)
    deviations: tuple = ()
    #: ``(old, new, why)``: edits of the example for both JAX and nxpy (smaller arrays
    #: than a notebook's, a stand-in for a data pipeline the tests do not install)
    edits: tuple = ()
    #: ``(JAX text, nxpy text)`` run first, each in its own spelling: the test's set-up of
    #: names an example leaves free (a JEP's pseudo-code), not part of the example
    prelude: tuple = ()
    #: replacements of JAX's text on a jax that cannot run it as written, ``(min version,
    #: [(old, new)])``; the port still takes the text as written
    jax_before: tuple = ()
    rtol: float = 1e-5
    atol: float = 1e-5
    skip_jax: str = ""
    marks: tuple = field(default=())

    def edited(self) -> str:
        code = self.code
        for old, new, _ in self.edits:
            assert old in code, f"{self.name}: edit {old!r} not in the example"
            code = code.replace(old, new)
        return code

    def nx_code(self) -> str:
        code = port(self.edited())
        for old, new, _ in self.deviations:
            assert old in code, f"{self.name}: deviation {old!r} not in the port"
            code = code.replace(old, new)
        return (self.prelude[1] if self.prelude else "") + code

    def jax_code(self) -> str:
        code = self.edited()
        if self.jax_before and _version() < self.jax_before[0]:
            for old, new in self.jax_before[1]:
                assert old in code, f"{self.name}: {old!r} not in the example"
                code = code.replace(old, new)
        return (self.prelude[0] if self.prelude else "") + code


def normal(key: str, shape: str, more: str = "") -> tuple:
    """The deviation of ``nx.random.normal(key, shape)``: nxpy.random is Nx.Random's API,
    whose ``normal(key, mean, std, shape=)`` returns the sample and the next key; its
    ``normal_split(key, shape=)`` is ``jax.random.normal(key, shape)``, bit for bit."""
    return (f"nx.random.normal({key}, {shape}{more})",
            f"nx.random.normal_split({key}, shape={shape}{more})",
            "nxpy.random is Nx.Random's API (jax.random.normal(key, shape) is its "
            "normal_split(key, shape=shape))")


def narrow(expr: str, dtype: str = "float32") -> tuple:
    """The deviation of a NumPy f64/s64 input (``np.arange(8)``, ``rng.normal(...)``):
    nxpy has 64-bit types without a mode and keeps it 64-bit where JAX without x64 (its
    default) narrows it (docs/numpy.md), so the port narrows it as JAX does."""
    return (expr, f"{expr}.astype(np.{dtype})",
            "a NumPy f64/s64 array stays 64-bit in nxpy (JAX without x64 narrows it)")


def example(name, where, code, **kw) -> Example:
    return Example(name, where, textwrap.dedent(code).strip("\n") + "\n", **kw)


def _version() -> tuple:
    return tuple(int(p) for p in re.findall(r"\d+", jax.__version__)[:3])


# ----------------------------------------------------------------------------------------
# Running and comparing
# ----------------------------------------------------------------------------------------
def _execute(code: str, filename: str) -> tuple[dict, str]:
    """``code`` run in a fresh namespace (its source registered for tracebacks; its last
    expression, which a notebook shows, kept as ``_``): the namespace and what it
    printed."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        tree.body[-1] = ast.copy_location(
            ast.Assign(targets=[ast.Name("_", ast.Store())], value=last.value), last)
        ast.fix_missing_locations(tree)
    module = types.ModuleType("__jax_tutorial__")   # a module: dataclasses look theirs up
    sys.modules[module.__name__] = module
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(tree, filename, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module.__dict__, out.getvalue()


@contextlib.contextmanager
def _jax_mesh_scope():
    """JAX's context mesh as it was, whatever the example sets (``jax.set_mesh`` is
    thread-local and restores the previous mesh on exit)."""
    with jax.sharding.set_mesh(None):
        yield


@contextlib.contextmanager
def _nx_mesh_scope():
    """nxpy's context mesh as it was (issue 45 item 1: ``nx.set_mesh``, a setter and a
    context manager, as JAX's); nothing to restore before it exists."""
    if hasattr(nx, "set_mesh"):
        with nx.set_mesh(None):
            yield
    else:
        yield


def run_jax(ex: Example) -> tuple[dict, str]:
    with _jax_mesh_scope():
        return _execute(ex.jax_code(), f"<jax: {ex.name}>")


def run_nx(ex: Example) -> tuple[dict, str]:
    with _nx_mesh_scope():
        return _execute(ex.nx_code(), f"<nxpy: {ex.name}>")


def shard_layout(x) -> tuple:
    """``(mesh axis names, mesh axis sizes, spec entries, sorted (device id, block))`` of a
    sharded ``jax.Array`` or nxpy tensor: a block is ``(start, stop)`` per dimension."""
    s = x.sharding
    assert s is not None, "no .sharding"
    ids = sorted(sh.device.id if isinstance(x, jax.Array) else sh.device_id
                 for sh in x.addressable_shards)
    if not hasattr(s, "mesh"):                       # a single device's
        return ("single device", tuple(ids))
    if isinstance(x, jax.Array):
        names, sizes = tuple(s.mesh.axis_names), tuple(s.mesh.devices.shape)
        shards = [(sh.device.id, sh.index) for sh in x.addressable_shards]
    else:
        names, sizes = tuple(s.mesh.axis_names), tuple(getattr(s.mesh, "axis_sizes", None)
                                                        or s.mesh.shape)
        shards = [(sh.device_id, sh.index) for sh in x.addressable_shards]
    spec = list(s.spec)
    while spec and spec[-1] is None:
        spec.pop()
    spec = tuple(tuple(e) if isinstance(e, (tuple, list)) else e for e in spec)
    blocks = sorted((d, tuple((i.start or 0, i.stop if i.stop is not None else n)
                              for i, n in zip(idx, x.shape))) for d, idx in shards)
    return names, sizes, spec, blocks


def picture_ids(text: str) -> list:
    """The device ids a sharding picture shows, row by row, left to right."""
    return [list(map(int, re.findall(r"\d+", line))) for line in text.splitlines()
            if re.search(r"\d", line)]


def printed_numbers(text: str) -> np.ndarray:
    """The numbers a printout shows, in order (True/False as 1/0), without the types and
    shapes of Nx's printing (``f32[2][3]``) or the words around them."""
    text = re.sub(r"^\s*NamedSharding\(.*$", " ", text, flags=re.M)   # a sharded tensor's
    text = re.sub(r"#Nx\.Tensor<|\b[a-z]+\d+(\[[^\]]*\])*", " ", text)
    text = re.sub(r"\b(True|true)\b", " 1 ", re.sub(r"\b(False|false)\b", " 0 ", text))
    found = re.findall(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\bnan\b", text)
    return np.array([float(v) for v in found])


def _capture(f, *a) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        f(*a)
    return out.getvalue()


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def check(ex: Example, close) -> None:
    """Run ``ex`` with JAX and with nxpy, and compare (``close``: tests/helpers.py's)."""
    nx_ns, nx_out = run_nx(ex)
    if ex.skip_jax:
        return
    jax_ns, jax_out = run_jax(ex)
    for name in ex.values:
        got, want = (str(jax.tree_util.tree_structure(v, is_leaf=_is_tensor))
                     for v in (nx_ns[name], jax_ns[name]))
        assert got == want, f"{ex.name}: {name} is {got}, JAX's {want}"   # classes by name
        close(nx_ns[name], jax_ns[name], ex.rtol, ex.atol, what=f"{ex.name}: {name}",
              dtypes=True)
    for name in ex.shardings:
        got, want = nx_ns[name], jax_ns[name]
        for i, (g, w) in enumerate(zip(jax.tree_util.tree_leaves(got, is_leaf=_is_tensor),
                                       jax.tree_util.tree_leaves(want))):
            assert shard_layout(g) == shard_layout(w), f"{ex.name}: {name} leaf {i} sharding"
    for name in ex.pictures:
        got = _capture(nx.visualize_sharding, nx_ns[name])
        want = _capture(jax.debug.visualize_array_sharding, jax_ns[name])
        assert picture_ids(got) == picture_ids(want), f"{ex.name}: picture of {name}\n{got}"
    for name in ex.absent:
        assert name not in nx_ns and name not in jax_ns, f"{ex.name}: {name} defined"
    said = f"{ex.name} printed:\n{nx_out}\nJAX printed:\n{jax_out}"
    if ex.stdout == "text":
        assert _normal(_unported(nx_out)) == _normal(jax_out), said
    elif ex.stdout == "numbers":
        got, want = printed_numbers(nx_out), printed_numbers(jax_out)
        assert got.shape == want.shape, said
        np.testing.assert_allclose(got, want, rtol=ex.rtol, atol=ex.atol, err_msg=said)
    elif ex.stdout == "some":
        assert nx_out.strip() and jax_out.strip(), said
    else:
        assert not ex.stdout, ex.stdout


def _unported(text: str) -> str:
    """What the port printed with JAX's names where the text shows the code: an f-string's
    ``{jax.typeof(x)=}`` prints its expression, which the port spelled ``nx.typeof``."""
    return re.sub(r"\bnx\.typeof\(", "jax.typeof(", text)


def _is_tensor(x) -> bool:
    return isinstance(x, nx.Tensor)


def as_bool(x) -> bool:
    return bool(np.asarray(x))
