"""nx.visualize_sharding and nx.inspect_sharding against JAX's
jax.debug.visualize_sharding / visualize_array_sharding / inspect_array_sharding.

Each picture is parsed back into its grid of blocks (which rows and columns of the array
each block spans, and the ids of the devices holding it) and compared with JAX's: with JAX's
own picture, drawn by ``rich`` where it is installed (both venvs have it, through flax), and
always with ``NamedSharding.devices_indices_map`` of JAX's sharding. Where JAX's picture fits
``max_width`` nxpy's is the same text, character for character (in colour: the same
characters with the same colours).
"""
import contextlib
import importlib.util
import io
import re

import numpy as np
import pytest

import nxpy as nx
from nxpy import P
from nxpy.defn import jit, shard_jit, shard_map, with_sharding_constraint
from nxpy.defn.sharding import shard

import jax  # after nxpy started XLA (conftest), so both share the host devices
import jax.numpy as jnp
from jax.sharding import Mesh as JMesh, NamedSharding as JNS, PartitionSpec as JP

HAS_RICH = importlib.util.find_spec("rich") is not None
needs_rich = pytest.mark.skipif(not HAS_RICH, reason="JAX draws its pictures with rich")


def meshes(shape, names, devices=None):
    n = int(np.prod(shape))
    if len(jax.devices()) < n:
        pytest.skip(f"needs {n} devices")
    devices = list(range(n)) if devices is None else list(devices)
    jdevs = np.empty(n, dtype=object)
    jdevs[:] = [jax.devices()[d] for d in devices]
    return (nx.Mesh("m", shape, axis_names=names, devices=devices),
            JMesh(jdevs.reshape(shape), names))


def nx_text(*args, **kw) -> str:
    out = io.StringIO()
    nx.visualize_sharding(*args, file=out, **kw)
    return out.getvalue()


def jax_text(fun, *args, **kw) -> str:
    """What ``fun`` (one of JAX's) prints, with colours off unless asked."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fun(*args, **{"use_color": False, **kw})
    return out.getvalue()


# ----------------------------------------------------------------------------------------
# Reading a picture back
# ----------------------------------------------------------------------------------------
def parse(text) -> dict:
    """A boxed picture → ``{"rows", "cols", "cells": {(i, j): (platform, ids)}}``; the box
    lines must form a full grid."""
    lines = text.rstrip("\n").split("\n")
    assert lines[0][0] == "┌" and lines[-1][0] == "└", text
    cols = [k for k, ch in enumerate(lines[0]) if ch in "┌┬┐"]
    rows = [r for r, line in enumerate(lines) if line[0] in "┌├└"]
    for r, line in enumerate(lines):
        assert len(line) == len(lines[0]), text
        if r not in rows:
            assert [k for k, ch in enumerate(line) if ch == "│"] == cols, text
    cells = {}
    for i, (r0, r1) in enumerate(zip(rows, rows[1:])):
        for j, (c0, c1) in enumerate(zip(cols, cols[1:])):
            words = " ".join(line[c0 + 1:c1] for line in lines[r0 + 1:r1]).split()
            cells[i, j] = _label(words)
    return {"rows": len(rows) - 1, "cols": len(cols) - 1, "cells": cells}


def _label(words):
    if not words:
        return None  # JAX loses the label of a block squeezed below it
    try:
        kind, ids = words
        return kind, tuple(int(i) for i in ids.split(","))
    except ValueError:  # cut short (JAX's squeezed blocks)
        return " ".join(words)


_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def char_grid(text) -> list:
    """A coloured picture → one list per line of ``(char, fg, bg)``."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        row, fg, bg, k = [], None, None, 0
        for m in _SGR.finditer(line + "\x1b[m"):
            row += [(ch, fg, bg) for ch in line[k:m.start()]]
            k = m.end()
            codes = [int(c) for c in m.group(1).split(";") if c]
            if not codes or codes == [0]:
                fg = bg = None
            while codes:
                c = codes.pop(0)
                if c in (38, 48):
                    kind = codes.pop(0)
                    value = tuple(codes[:3]) if kind == 2 else (codes[0],)
                    del codes[:3 if kind == 2 else 1]
                    if c == 38:
                        fg = value
                    else:
                        bg = value
        out.append(row)
    return out


def color_blocks(text) -> dict:
    """A coloured picture → ``{"rows", "cols", "cells": {(i, j): (platform, ids)}}``: the
    blocks are the runs of one background colour (neighbours differ)."""
    grid = char_grid(text)
    bgs = [tuple(bg for _, _, bg in row) for row in grid]
    assert all(bg is not None for row in bgs for bg in row), text
    cuts = [0] + [k for k in range(1, len(bgs[0])) if bgs[0][k] != bgs[0][k - 1]]
    bands = [0] + [r for r in range(1, len(bgs)) if bgs[r][0] != bgs[r - 1][0]]
    cells = {}
    for i, (r0, r1) in enumerate(zip(bands, bands[1:] + [len(bgs)])):
        for j, (c0, c1) in enumerate(zip(cuts, cuts[1:] + [len(bgs[0])])):
            assert {bgs[r][c] for r in range(r0, r1) for c in range(c0, c1)} == {bgs[r0][c0]}
            words = " ".join("".join(ch for ch, _, _ in grid[r][c0:c1])
                             for r in range(r0, r1)).split()
            cells[i, j] = _label(words)
    return {"rows": len(bands), "cols": len(cuts), "cells": cells}


def expected(shape, jsharding) -> dict:
    """JAX's blocks, from its ``devices_indices_map``: ``{"rows", "cols", "spans": {(i, j):
    the (start, stop) of each dim}, "cells": {(i, j): (platform, ids)}}`` (1-D: one row)."""
    ids = {}
    for dev, idx in jsharding.devices_indices_map(tuple(shape)).items():
        span = tuple((s.start or 0, n if s.stop is None else s.stop) for s, n in zip(idx, shape))
        ids.setdefault(span, []).append(dev.id)
    starts = [sorted({span[d][0] for span in ids}) for d in range(len(shape))]
    kind = next(iter(jsharding.device_set)).platform.upper()
    cells, spans = {}, {}
    for span, devs in ids.items():
        key = tuple(starts[d].index(s[0]) for d, s in enumerate(span))
        key = (0, *key) if len(shape) == 1 else key
        cells[key], spans[key] = (kind, tuple(sorted(devs))), span
    rows, cols = (1, len(starts[0])) if len(shape) == 1 else map(len, starts)
    return {"rows": rows, "cols": cols, "cells": cells, "spans": spans}


def check_blocks(picture, shape, jsharding):
    """The drawn grid is JAX's: as many rows and columns, each block spanning the rows and
    columns of the array that JAX's devices_indices_map gives its devices."""
    want = expected(shape, jsharding)
    assert (picture["rows"], picture["cols"]) == (want["rows"], want["cols"])
    assert picture["cells"] == want["cells"]
    for (i, j), span in want["spans"].items():
        drawn = ((j, picture["cols"]),) if len(shape) == 1 else ((i, picture["rows"]),
                                                                 (j, picture["cols"]))
        assert tuple((k * n // m, (k + 1) * n // m) for (k, m), n in zip(drawn, shape)) == span


# ----------------------------------------------------------------------------------------
# 1-D and 2-D shardings, replicated and partially replicated, against JAX
# ----------------------------------------------------------------------------------------
#: (shape, mesh shape, mesh axes, spec, options); JAX's picture of the last cases does not
#: fit max_width (rich squeezes the blocks and loses their labels; nxpy keeps them)
CASES = [
    ((8,), (4,), ("x",), ("x",), {}),
    ((8,), (4,), ("x",), (), {}),
    ((16,), (8,), ("x",), ("x",), {}),
    ((8,), (2, 2), ("x", "y"), ("x",), {}),                  # partially replicated
    ((8,), (2, 2), ("x", "y"), (("y", "x"),), {}),
    ((1,), (2,), ("x",), (), {}),
    ((8, 4), (2, 2), ("x", "y"), ("x", "y"), {}),
    ((8, 4), (2, 2), ("x", "y"), ("x",), {}),                # partially replicated
    ((8, 4), (2, 2), ("x", "y"), (None, "y"), {}),
    ((8, 4), (2, 2), ("x", "y"), (), {}),                    # replicated
    ((8, 4), (2, 2), ("x", "y"), (("x", "y"),), {}),
    ((8, 4), (2, 2), ("x", "y"), (None, ("y", "x")), {}),
    ((8, 4), (2, 4), ("x", "y"), ("y", "x"), {}),
    ((4, 8), (2, 4), ("x", "y"), ("x", "y"), {}),
    ((8, 8), (8,), ("x",), ("x",), {}),
    ((8, 8), (8,), ("x",), (None, "x"), {}),
    ((3, 3), (2,), ("x",), (), {}),
    ((1000, 4), (2, 2), ("x", "y"), ("x", "y"), {}),
    ((8, 4), (2, 2), ("x", "y"), ("x", "y"), {"scale": 2}),
    ((8, 4), (2, 2), ("x", "y"), ("x", "y"), {"scale": 0.5}),
    ((8, 8), (2, 4), ("x", "y"), (None, ("x", "y")), {"scale": 0.3}),
    ((8, 4), (2, 2), ("x", "y"), ("x", "y"), {"min_width": 14}),
    ((4, 1000), (2, 2), ("x", "y"), ("x", "y"), {}),
    ((8, 16), (2, 2), ("x", "y"), (None, "y"), {"max_width": 40}),
    ((8, 4), (2, 2), ("x", "y"), ("x", "y"), {"min_width": 20, "max_width": 30}),
]
FITS = len(CASES) - 3


def _case_id(case):
    shape, mshape, _, spec, opts = case
    return f"{shape}-{mshape}-P{spec}" + "".join(f"-{k}={v}" for k, v in opts.items())


@pytest.mark.parametrize("k", range(len(CASES)), ids=[_case_id(c) for c in CASES])
def test_against_jax(k):
    shape, mshape, names, spec, opts = CASES[k]
    mesh, jmesh = meshes(mshape, names)
    sharding, jsharding = nx.NamedSharding(mesh, P(*spec)), JNS(jmesh, JP(*spec))
    text = nx_text(shape, sharding, **opts)
    picture = parse(text)
    check_blocks(picture, shape, jsharding)
    x = nx.device_put(nx.iota(shape, type="f32"), sharding)
    assert nx_text(x, **opts) == text  # the tensor draws as its sharding does
    if HAS_RICH:
        theirs = jax_text(jax.debug.visualize_sharding, shape, jsharding, **opts)
        if k < FITS:
            assert text == theirs
        else:  # the same grid; JAX's labels are lost, nxpy's shortened to fit
            drawn = parse(theirs)
            assert (drawn["rows"], drawn["cols"]) == (picture["rows"], picture["cols"])
            assert len(theirs.split("\n")[0]) == len(text.split("\n")[0]) <= opts.get(
                "max_width", 80)


def test_devices_in_any_order():
    """A mesh over devices in another order: each block names its devices' ids, sorted."""
    mesh, jmesh = meshes((2, 2), ("x", "y"), devices=[3, 1, 2, 0])
    for spec in [("x",), (None, "y"), ("y", "x")]:
        text = nx_text((4, 4), nx.NamedSharding(mesh, P(*spec)))
        check_blocks(parse(text), (4, 4), JNS(jmesh, JP(*spec)))
        if HAS_RICH:
            assert text == jax_text(jax.debug.visualize_sharding, (4, 4),
                                    JNS(jmesh, JP(*spec)))
    assert parse(nx_text((4,), nx.NamedSharding(mesh, P("x"))))["cells"] == {
        (0, 0): ("CPU", (1, 3)), (0, 1): ("CPU", (0, 2))}


@pytest.mark.parametrize("path", ["numpy", "exla"])
def test_sharded_tensor_on_each_backend(path):
    """A sharded tensor of the NumPy backend (the Evaluator's simulated mesh) and of EXLA
    draws the same picture, JAX's for the same jax.Array."""
    mesh, jmesh = meshes((2, 2), ("x", "y"))
    x = nx.device_put(nx.iota((8, 4), type="f32"), nx.NamedSharding(mesh, P("x")),
                      backend=path)
    assert x.backend.name == path
    text = nx_text(x)
    ja = jax.device_put(jnp.arange(32.0).reshape(8, 4), JNS(jmesh, JP("x")))
    check_blocks(parse(text), (8, 4), ja.sharding)
    assert parse(text)["cells"] == {(0, 0): ("CPU", (0, 1)), (1, 0): ("CPU", (2, 3))}
    if HAS_RICH:
        assert text == jax_text(jax.debug.visualize_array_sharding, ja)


@pytest.mark.parametrize("where", ["numpy", "device 0", "device 1"])
def test_unplaced_tensor_is_one_block(where):
    """A tensor that is not sharded is one block on its device (a NumPy-backend tensor: the
    host, CPU 0), as JAX draws an array on one device."""
    x = nx.iota((4, 6), type="f32")
    dev = 0
    if where != "numpy":
        dev = int(where.split()[1])
        x = nx.device_put(x, dev)
        assert x.device_id == dev and x.sharding is None
    text = nx_text(x)
    assert parse(text) == {"rows": 1, "cols": 1, "cells": {(0, 0): ("CPU", (dev,))}}
    if HAS_RICH:
        ja = jax.device_put(jnp.zeros((4, 6)), jax.devices()[dev])
        assert text == jax_text(jax.debug.visualize_array_sharding, ja)
    one = io.StringIO()
    nx.inspect_sharding(x, callback=lambda s: one.write(repr(s)))
    assert one.getvalue() == "None"  # its .sharding


# ----------------------------------------------------------------------------------------
# Traced values: printed when the function is traced
# ----------------------------------------------------------------------------------------
def _steps(vis):
    """b = a * 2, its row sums and its transpose, each drawn; ``vis`` is the drawer."""
    def f(a):
        b = a * 2
        vis(b)
        c = b.sum(axis=1) if isinstance(a, jax.Array) else nx.sum(b, axes=[1])
        vis(c)
        vis(b.T if isinstance(a, jax.Array) else nx.transpose(b))
        return c
    return f


@pytest.mark.parametrize("compiler", ["evaluator", "exla"])
def test_inside_jit_propagated(compiler, capsys):
    """Inside jit on sharded tensors each value is drawn as nxpy's propagation lays it out
    (the arguments' shardings through elementwise ops, a reduction, a transpose): JAX's
    pictures of the same program, drawn when it compiles. Printed once per trace."""
    mesh, jmesh = meshes((2, 2), ("x", "y"))
    backend = "numpy" if compiler == "evaluator" else "exla"
    x = nx.device_put(nx.iota((8, 4), type="f32"), nx.NamedSharding(mesh, P("x", "y")),
                      backend=backend)
    f = jit(_steps(lambda v: nx.visualize_sharding(v)), compiler=compiler)
    capsys.readouterr()
    f(x)
    ours = capsys.readouterr().out
    f(x)
    assert capsys.readouterr().out == ""  # the trace is cached: nothing printed again
    pictures = [parse(p + "┘\n") for p in ours.split("┘\n")[:-1]]
    ja = jax.device_put(jnp.arange(32.0).reshape(8, 4), JNS(jmesh, JP("x", "y")))
    shardings = []
    jax.jit(_steps(lambda v: jax.debug.inspect_array_sharding(
        v, callback=shardings.append)))(ja)
    assert len(pictures) == len(shardings) == 3
    for picture, shape, s in zip(pictures, [(8, 4), (8,), (4, 8)], shardings):
        check_blocks(picture, shape, s)
    if HAS_RICH:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            jax.jit(_steps(lambda v: jax.debug.visualize_array_sharding(
                v, use_color=False)))(ja)
        theirs = out.getvalue()
        assert ours == theirs
    seen = []
    jit(_steps(lambda v: nx.inspect_sharding(v, callback=seen.append)),
        compiler=compiler)(x)
    assert [s.spec for s in seen] == [P("x", "y"), P("x"), P("y", "x")]
    assert [s.spec for s in shardings] == [JP("x", "y"), JP("x"), JP("y", "x")]


@pytest.mark.parametrize("compiler", ["evaluator", "exla"])
def test_inside_jit_constraint_and_one_device(compiler):
    """A value pinned by with_sharding_constraint (in a program traced with no sharded
    argument) is drawn with its constraint's layout; in a program over no mesh a value is
    one block on the default device, as JAX draws it."""
    mesh, jmesh = meshes((2, 2), ("x", "y"))
    pictures = []

    def f(a):
        b = with_sharding_constraint(a * 2, nx.NamedSharding(mesh, P(None, "y")))
        pictures.append(nx_text(b))
        pictures.append(nx_text(b + 1))
        return b

    jit(f, compiler=compiler)(nx.iota((4, 4), type="f32"))
    jf = JNS(jmesh, JP(None, "y"))
    check_blocks(parse(pictures[0]), (4, 4), jf)
    check_blocks(parse(pictures[1]), (4, 4), jf)  # propagated from the constraint
    jit(lambda a: pictures.append(nx_text(a * 2)) or a, compiler=compiler)(nx.iota((4, 4)))
    assert parse(pictures[2])["cells"] == {(0, 0): ("CPU", (0,))}
    if HAS_RICH:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            jax.jit(lambda a: jax.debug.visualize_array_sharding(a * 2, use_color=False)
                    or a)(jnp.zeros((4, 4)))
        assert pictures[2] == out.getvalue()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            jax.jit(lambda a: jax.debug.visualize_array_sharding(
                jax.lax.with_sharding_constraint(a * 2, jf), use_color=False) or a)(
                    jnp.zeros((4, 4)))
        assert pictures[0] == out.getvalue()


@pytest.mark.parametrize("compiler", ["evaluator", "exla"])
def test_inside_shard_jit(compiler):
    """Nx's global view: shard_jit's input_shardings are the arguments' layouts."""
    mesh, jmesh = meshes((2, 2), ("x", "y"))
    pictures = []
    f = shard_jit(lambda a: pictures.append(nx_text(nx.sum(a * 2, axes=[0]))) or a, mesh,
                  input_shardings=[{0: ["x"], 1: ["y"]}], compiler=compiler)
    f([[s] for s in shard(nx.iota((4, 8), type="f32"), mesh, {0: ["x"], 1: ["y"]})])
    check_blocks(parse(pictures[0]), (8,), JNS(jmesh, JP("y")))


@pytest.mark.parametrize("compiler", ["evaluator", "exla"])
def test_inside_shard_map(compiler):
    """In a shard_map body a value is each device's own block: drawn, as JAX draws it, at
    the block's shape, replicated over the mesh."""
    mesh, jmesh = meshes((2, 2), ("x", "y"))
    pictures = []
    body = shard_map(lambda a: pictures.append(nx_text(a)) or a, mesh,
                     in_specs=P("x", "y"), out_specs=P("x", "y"), compiler=compiler)
    body(nx.iota((8, 4), type="f32"))
    assert parse(pictures[0])["cells"] == {(0, 0): ("CPU", (0, 1, 2, 3))}
    if HAS_RICH:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            jax.jit(jax.shard_map(lambda a: jax.debug.visualize_array_sharding(
                a, use_color=False) or a, mesh=jmesh, in_specs=JP("x", "y"),
                out_specs=JP("x", "y")))(jnp.zeros((8, 4)))
        assert pictures[0] == out.getvalue()


def test_inspect_sharding_containers():
    mesh, _ = meshes((2, 2), ("x", "y"))
    x = nx.device_put(nx.iota((4, 4)), nx.NamedSharding(mesh, P("x")))
    seen = []
    nx.inspect_sharding({"a": x, "b": [nx.iota((2,)), x]}, callback=seen.append)
    assert seen == [x.sharding, None, x.sharding]


# ----------------------------------------------------------------------------------------
# Colour: on a terminal, JAX's colours; never elsewhere
# ----------------------------------------------------------------------------------------
class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_colour_only_on_a_terminal(monkeypatch):
    mesh, _ = meshes((2, 2), ("x", "y"))
    s = nx.NamedSharding(mesh, P("x", "y"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLORTERM", "truecolor")
    plain = nx_text((8, 4), s)
    assert "\x1b" not in plain  # not a terminal
    term = Terminal()
    nx.visualize_sharding((8, 4), s, file=term)
    assert "\x1b[" in term.getvalue() and "┌" not in term.getvalue()
    assert color_blocks(term.getvalue())["cells"] == parse(plain)["cells"]
    for env, value in [("NO_COLOR", "1"), ("TERM", "dumb")]:
        with monkeypatch.context() as m:
            m.setenv(env, value)
            term = Terminal()
            nx.visualize_sharding((8, 4), s, file=term)
            assert term.getvalue() == plain
    term = Terminal()
    nx.visualize_sharding((8, 4), s, file=term, use_color=False)
    assert term.getvalue() == plain
    monkeypatch.delenv("COLORTERM")  # 256 colours: the same blocks
    term = Terminal()
    nx.visualize_sharding((8, 4), s, file=term)
    assert "38;5;" in term.getvalue() and "38;2;" not in term.getvalue()
    assert color_blocks(term.getvalue())["cells"] == parse(plain)["cells"]


#: colour cases: 4 and 8 blocks, where JAX 0.10 and 0.12 visit the colours in one order
COLOR_CASES = [((8, 4), (2, 2), ("x", "y"), ("x", "y"), {}),
               ((8, 4), (2, 2), ("x", "y"), ("x", "y"), {"scale": 0.5}),
               ((8,), (4,), ("x",), ("x",), {}),
               ((8, 8), (2, 4), ("x", "y"), ("x", "y"), {}),
               ((8, 4), (2, 4), ("x", "y"), ("y",), {"min_width": 12})]


@needs_rich
@pytest.mark.parametrize("k", range(len(COLOR_CASES)), ids=[_case_id(c) for c in COLOR_CASES])
def test_colours_against_jax(k, monkeypatch):
    """The same characters in the same colours as rich draws JAX's picture on a 24-bit
    terminal (matplotlib's tab20b, JAX's default)."""
    pytest.importorskip("matplotlib")
    shape, mshape, names, spec, opts = COLOR_CASES[k]
    mesh, jmesh = meshes(mshape, names)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLORTERM", "truecolor")
    term = Terminal()
    nx.visualize_sharding(shape, nx.NamedSharding(mesh, P(*spec)), file=term, **opts)
    theirs = jax_text(jax.debug.visualize_sharding, shape, JNS(jmesh, JP(*spec)),
                      use_color=True, **opts)
    assert char_grid(term.getvalue()) == char_grid(theirs)
    check_blocks(color_blocks(term.getvalue()), shape, JNS(jmesh, JP(*spec)))


def test_colour_map_and_order(monkeypatch):
    """Two blocks get two colours (JAX 0.12's order; 0.10 painted both alike); a
    color_map is called on NumPy's linspace points."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLORTERM", "truecolor")
    mesh, _ = meshes((2,), ("x",))
    s = nx.NamedSharding(mesh, P("x"))
    term = Terminal()
    nx.visualize_sharding((4,), s, file=term, color_map=lambda v: (v, 0.0, 1 - v))
    grid = char_grid(term.getvalue())
    assert {c[2] for c in grid[0]} == {(0, 0, 255), (255, 0, 0)}
    with pytest.raises(TypeError, match="color_map must map a float"):
        nx.visualize_sharding((4,), s, file=Terminal(), color_map=lambda v: None)


# ----------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------
def test_bad_input():
    mesh, _ = meshes((2,), ("x",))
    s = nx.NamedSharding(mesh, P("x"))
    for x, shape in [(nx.tensor(1.0), "()"), (nx.iota((2, 2, 2)), r"\(2, 2, 2\)")]:
        with pytest.raises(ValueError, match=rf"x must have rank 1 or 2 .*got shape {shape}"):
            nx.visualize_sharding(x)
    with pytest.raises(ValueError, match="rank 1 or 2"):  # JAX's refusal, on traced values
        jit(lambda a: nx.visualize_sharding(a) or a)(nx.tensor(1.0))
    with pytest.raises(ValueError, match="rank 1 or 2"):
        nx.visualize_sharding((2, 2, 2), nx.NamedSharding(mesh, P()))
    with pytest.raises(TypeError, match=r"expected x to be an nx.Tensor .* got numpy.ndarray"):
        nx.visualize_sharding(np.ones((2, 2)))
    with pytest.raises(TypeError, match=r"expected x to be an nx.Tensor .* got list"):
        nx.visualize_sharding([1, 2])
    with pytest.raises(TypeError, match="pass sharding only with a shape"):
        nx.visualize_sharding(nx.iota((2,)), s)
    with pytest.raises(TypeError, match="expected sharding to be an nx.NamedSharding, got"):
        nx.visualize_sharding((4,), P("x"))
    with pytest.raises(TypeError, match="expected x to be a shape"):
        nx.visualize_sharding("abc", s)
    with pytest.raises(ValueError, match=r"dim 0 of shape \(3,\) .* cannot be split"):
        nx.visualize_sharding((3,), s)
    x = nx.iota((4,))
    for opts, err, what in [({"scale": 0}, ValueError, "scale to be a positive number"),
                            ({"scale": "2"}, ValueError, "scale to be a positive number"),
                            ({"min_width": 0}, ValueError, "min_width to be a positive int"),
                            ({"max_width": 2.5}, ValueError, "max_width to be a positive"),
                            ({"use_color": "yes"}, TypeError, "use_color to be a bool"),
                            ({"color_map": "tab20b"}, TypeError, "color_map to be a function"),
                            ({"file": 3}, TypeError, "file to have a write method")]:
        with pytest.raises(err, match=what):
            nx.visualize_sharding(x, **opts)
    with pytest.raises(TypeError, match="expected callback to be a function"):
        nx.inspect_sharding(x, callback=None)
    with pytest.raises(TypeError, match=r"inspect_sharding: expected x to be an nx.Tensor"):
        nx.inspect_sharding(3, callback=print)
    with pytest.raises(TypeError, match=r"inspect_sharding: expected x to be an nx.Tensor"):
        nx.inspect_sharding([x, np.ones(2)], callback=print)


def test_zero_size_dims():
    """JAX divides by a zero dim; nxpy draws the blocks."""
    mesh, _ = meshes((2,), ("x",))
    assert parse(nx_text((0, 4), nx.NamedSharding(mesh, P("x"))))["rows"] == 2
    assert parse(nx_text((0,), nx.NamedSharding(mesh, P("x"))))["cols"] == 2
