"""Pictures of shardings: :func:`visualize_sharding` draws which device holds which block
of a tensor, as ``jax.debug.visualize_array_sharding`` does, and :func:`inspect_sharding`
hands the sharding to a callback, as ``jax.debug.inspect_array_sharding`` does. Both take a
sharded tensor, a tensor on one device, or a value inside a traced function (``jit``,
``shard_jit``, a ``shard_map`` body), where they act when the function is traced.

The grid is JAX's, sized by JAX's rules (a 1-D tensor is one row of blocks; a block is
labelled with the platform and the ids of the devices that hold it, ``CPU 0,1``) and drawn
with Unicode box characters; on a terminal that has colours (standard output a TTY,
``NO_COLOR`` unset, ``TERM`` not ``dumb``) each block is a coloured patch instead, in JAX's
colours (matplotlib's ``tab20b``, built in: nothing beyond the standard library is needed).

>>> import nxpy as nx
>>> mesh = nx.Mesh("m", (2, 2), axis_names=("x", "y"))
>>> x = nx.device_put(nx.iota((8,)), nx.NamedSharding(mesh, nx.P("x")))
>>> nx.visualize_sharding(x)
┌───────┬───────┐
│CPU 0,1│CPU 2,3│
└───────┴───────┘
"""
from __future__ import annotations

import math
import numbers
import os
import sys

import numpy as np

from . import pjrt
from .backend import Backend
from .layout import NamedSharding
from .tensor import Tensor
from .defn.sharding.collectives import current_mesh
from .defn.sharding.specs import Propagator
from .defn.tree import flatten

__all__ = ["visualize_sharding", "inspect_sharding"]

#: matplotlib's ``tab20b`` colour map (JAX's default), as ``#RRGGBB``: a listed map of 20
#: colours, so ``color_map(v)`` is entry ``min(int(v * 20), 19)``
TAB20B = ("#393B79", "#5254A3", "#6B6ECF", "#9C9EDE", "#637939", "#8CA252", "#B5CF6B",
          "#CEDB9C", "#8C6D31", "#BD9E39", "#E7BA52", "#E7CB94", "#843C39", "#AD494A",
          "#D6616B", "#E7969C", "#7B4173", "#A55194", "#CE6DBD", "#DE9ED6")


def _tab20b(v: float) -> tuple:
    c = TAB20B[min(int(v * len(TAB20B)), len(TAB20B) - 1)]
    return tuple(int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)) + (1.0,)


# ----------------------------------------------------------------------------------------
# What is drawn: the blocks of a tensor and the devices of each
# ----------------------------------------------------------------------------------------
class _View:
    """A shape, the sharding shown (None: one device) and how to name its devices."""

    def __init__(self, shape, sharding=None, device=None):
        self.shape, self.sharding, self.device = tuple(shape), sharding, device

    def blocks(self) -> tuple:
        """``(num_rows, num_cols, {(row, col): label})``; a 1-D shape is one row."""
        rank = len(self.shape)
        if self.sharding is None:
            return 1, 1, {(0, 0): _label([self.device])}
        sh = self.sharding
        sh.axes(rank, "visualize_sharding")
        counts = [sh.factor(d) for d in range(rank)]
        ids: dict = {}
        for p, pos in enumerate(sh.mesh.devices):
            idx = tuple(sh.block_index(p, d) for d in range(rank))
            ids.setdefault(idx if rank == 2 else (0, *idx), []).append(pos)
        rows, cols = (counts if rank == 2 else [1, counts[0]])
        return rows, cols, {k: _label(v) for k, v in ids.items()}


def _device(pos):
    """``(platform, id)`` of the device at client position ``pos`` (None: the host)."""
    if pos is None:
        return "CPU", 0
    d = pjrt.devices()[pos]
    return d.platform.upper(), d.id


def _label(positions) -> str:
    devs = [_device(p) for p in positions]
    return f"{devs[0][0]} " + ",".join(str(i) for i in sorted(i for _, i in devs))


def _traced_view(x: Tensor) -> _View:
    """The sharding of a traced value as nxpy knows it while tracing: in a program over a
    mesh (jit on sharded tensors, shard_jit), what nxpy's propagation computes from the
    arguments' shardings and the constraints traced so far; inside a shard_map body, each
    device's own block (JAX: replicated over the mesh, at the block's shape)."""
    ctx = current_mesh()
    e = x.data
    if ctx is not None and ctx.view != "global":
        return _View(x.shape, NamedSharding(ctx.mesh))
    if ctx is not None:
        prop = ctx.propagator if ctx.propagator is not None else Propagator(ctx.mesh)
        return _View(x.shape, prop.layout(x))
    mesh = _constraint_mesh(e)
    if mesh is not None:  # no mesh yet, but a constraint names one: arguments replicated
        return _View(x.shape, Propagator(mesh).layout(x))
    return _View(x.shape, None, pjrt.default_device())  # where a program with no mesh runs


def _constraint_mesh(e):
    """The mesh of the first ``with_sharding_constraint`` that ``e`` depends on, if any."""
    seen, stack = set(), [e]
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if n.op == "sharding_constraint":
            return n.attrs["mesh"]
        stack.extend(n.tensor_args())
    return None


def _view(x, what) -> _View:
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: expected x to be an nx.Tensor (sharded, on one device, or "
                        f"a traced value inside jit), got {_describe(x)}")
    if isinstance(x.backend, Backend) and x.backend.is_expr:
        return _traced_view(x)
    return _View(x.shape, x.sharding, x.device_id)


def _describe(x) -> str:
    cls = type(x)
    name = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
    text = repr(x)
    return f"{name} {text if len(text) <= 60 else text[:57] + '...'}"


def _shape_view(shape, sharding) -> _View:
    try:
        dims = tuple(shape)
    except TypeError:
        dims = None
    if dims is None or not all(isinstance(n, numbers.Integral) and not isinstance(n, bool)
                               and n >= 0 for n in dims):
        raise TypeError(f"visualize_sharding: with a sharding, expected x to be a shape (a "
                        f"tuple of non-negative ints, as JAX's visualize_sharding(shape, "
                        f"sharding) takes), got {_describe(shape)}")
    if not isinstance(sharding, NamedSharding):
        raise TypeError(f"visualize_sharding: expected sharding to be an nx.NamedSharding, "
                        f"got {_describe(sharding)}")
    dims = tuple(int(n) for n in dims)
    if len(dims) <= 2:
        sharding.axes(len(dims), "visualize_sharding: sharding")
        for d, n in enumerate(dims):
            f = sharding.factor(d)
            if n % f:
                raise ValueError(f"visualize_sharding: dim {d} of shape {dims} (size {n}) "
                                 f"cannot be split into the {f} blocks of {sharding!r}")
    return _View(dims, sharding)


# ----------------------------------------------------------------------------------------
# The drawing
# ----------------------------------------------------------------------------------------
def render(view: _View, *, use_color=False, scale=1.0, min_width=9, max_width=80,
           color_map=None, truecolor=True) -> str:
    """The picture of ``view`` as text (one ``\\n``-terminated line per row of
    characters); ``use_color`` draws coloured patches with ANSI escapes (24-bit, or the
    nearest of 256 colours) instead of boxes."""
    shape = view.shape
    rows, cols, labels = view.blocks()
    base_height = int(10 * scale)
    aspect = (shape[1] if len(shape) == 2 else 1) / shape[0] if shape[0] else 1.0
    base_width = int(base_height * aspect)
    cells = {}
    for (i, j), label in labels.items():  # each block's size and margins, as JAX's
        width = int((1 / cols) * base_width * 2.5)
        height = 1 if len(shape) == 1 else int((1 / rows) * base_height)
        width = min(max(width, min_width), max_width)
        left, rem = divmod(width - len(label) - 2, 2)
        right = left + rem
        top, rem = divmod(height - 2, 2)
        bottom = top + rem
        if use_color:
            top, bottom, left, right = top + 1, bottom + 1, left + 1, right + 1
        cells[i, j] = (label, max(top, 0), max(right, 0), max(bottom, 0), max(left, 0))
    widths = [max(c[4] + len(c[0]) + c[2] for (_, j), c in cells.items() if j == col)
              for col in range(cols)]
    heights = [max(c[1] + 1 + c[3] for (i, _), c in cells.items() if i == row)
               for row in range(rows)]
    room = max_width - (0 if use_color else cols + 1)
    while sum(widths) > room and max(widths) > 1:  # narrowest fit: the widest (last) first
        j = max(range(cols), key=lambda k: (widths[k], k))
        widths[j] -= 1
    colors = _colors(color_map or _tab20b, rows, cols) if use_color else None
    out = []
    if not use_color:
        out.append("┌" + "┬".join("─" * w for w in widths) + "┐")
    for i in range(rows):
        if i and not use_color:
            out.append("├" + "┼".join("─" * w for w in widths) + "┤")
        blocks = [_cell(cells[i, j], widths[j], heights[i]) for j in range(cols)]
        for k in range(heights[i]):
            if use_color:
                out.append("".join(_paint(b[k], colors[i * cols + j], truecolor)
                                   for j, b in enumerate(blocks)))
            else:
                out.append("│" + "│".join(b[k] for b in blocks) + "│")
    if not use_color:
        out.append("└" + "┴".join("─" * w for w in widths) + "┘")
    return "".join(line + "\n" for line in out)


def _cell(cell, width, height) -> list:
    """The lines of one block: the label centred between its margins, blank lines above
    and below, padded to the row's height (at the bottom, as rich does)."""
    label, top, right, bottom, left = cell
    if left + len(label) + right > width:  # squeezed to fit max_width: the margins go first
        left = right = 0
        if len(label) > width:
            label = label[:width - 1] + "…" if width > 1 else label[:width]
    inner = width - left - right
    pad = inner - len(label)
    text = " " * (left + pad // 2) + label + " " * (pad - pad // 2 + right)
    lines = [" " * width] * top + [text] + [" " * width] * bottom
    return lines + [" " * width] * (height - len(lines))


def _colors(color_map, rows, cols) -> list:
    """JAX's colours: ``n`` evenly spaced values of the map, visited with a step coprime
    to ``n`` so that neighbours differ (JAX 0.12's order)."""
    n = rows * cols
    step = n // 2 + (n % 2 == 0) + (n % 4 == 2)
    values = np.linspace(0, 1, n)  # NumPy's points, as JAX's: int(v * 20) is sensitive
    out, idx = [], 0
    for _ in range(n):
        v = float(values[idx])
        c = color_map(v)
        try:
            rgb = tuple(int(a * 255) for a in tuple(c)[:3])
        except (TypeError, ValueError):
            raise TypeError(f"visualize_sharding: color_map must map a float in [0, 1] to an "
                            f"(r, g, b[, a]) tuple of floats in [0, 1], got {c!r} for "
                            f"{v!r}") from None
        if len(rgb) != 3 or not all(0 <= a <= 255 for a in rgb):
            raise ValueError(f"visualize_sharding: color_map must map a float in [0, 1] to "
                             f"an (r, g, b[, a]) tuple of floats in [0, 1], got {c!r} for "
                             f"{v!r}")
        out.append(rgb)
        idx = (idx + step) % n
    return out


def _paint(text, rgb, truecolor) -> str:
    fg = (0, 0, 0) if rgb[0] * 0.299 + rgb[1] * 0.587 + rgb[2] * 0.114 > 186 else \
        (255, 255, 255)
    if truecolor:
        code = f"38;2;{fg[0]};{fg[1]};{fg[2]};48;2;{rgb[0]};{rgb[1]};{rgb[2]}"
    else:
        code = f"38;5;{_ansi256(fg)};48;5;{_ansi256(rgb)}"
    return f"\x1b[{code}m{text}\x1b[0m"


def _ansi256(rgb) -> int:
    """The nearest of the 256-colour palette's 6x6x6 cube and grey ramp."""
    levels = (0, 95, 135, 175, 215, 255)

    def near(v):
        return min(range(6), key=lambda k: abs(levels[k] - v))

    cube = tuple(near(v) for v in rgb)
    c_rgb = tuple(levels[k] for k in cube)
    grey = min(range(24), key=lambda k: abs(8 + 10 * k - sum(rgb) / 3))
    g_rgb = (8 + 10 * grey,) * 3

    def dist(a):
        return sum((p - q) ** 2 for p, q in zip(a, rgb))

    if dist(g_rgb) < dist(c_rgb):
        return 232 + grey
    return 16 + 36 * cube[0] + 6 * cube[1] + cube[2]


def _terminal_colors(file):
    """``(has colours, 24-bit)`` for ``file``: a TTY, ``NO_COLOR`` unset or empty and
    ``TERM`` not ``dumb``; 24-bit when ``COLORTERM`` says so."""
    isatty = getattr(file, "isatty", None)
    try:
        tty = bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):  # a closed file
        tty = False
    if not tty or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False, False
    return True, os.environ.get("COLORTERM", "").lower() in ("truecolor", "24bit")


# ----------------------------------------------------------------------------------------
# The public functions
# ----------------------------------------------------------------------------------------
def visualize_sharding(x, sharding=None, *, use_color=True, scale=1.0, min_width=9,
                       max_width=80, color_map=None, file=None) -> None:
    """Prints which device holds which block of ``x`` (``jax.debug.visualize_array_sharding``):
    a grid of the blocks, a 1-D tensor as one row, each block labelled with the platform and
    the ids of the devices holding it (``CPU 0,2``: a block replicated on two devices). ``x``
    is a sharded tensor, a tensor on one device (one block), or a value inside a traced
    function: there the picture is printed when the function is traced (once per trace, as
    JAX prints when it compiles), showing the sharding nxpy's propagation computes from the
    arguments' shardings and the ``with_sharding_constraint`` calls traced so far (the
    results are laid out so; XLA may lay out an intermediate value differently), and
    inside a ``shard_map`` body each device's own block, replicated over the mesh, as JAX
    shows it. ``visualize_sharding(shape, sharding)`` draws a :class:`~nxpy.NamedSharding`
    for an array of ``shape``, as ``jax.debug.visualize_sharding`` does.

    JAX's options: ``use_color`` (coloured patches where ``file`` is a terminal with
    colours, ``NO_COLOR`` unset; box lines otherwise), ``scale`` (the height of a 2-D
    picture, 10 lines at 1), ``min_width``/``max_width`` (the width of a block, in
    characters; the whole picture is made to fit ``max_width``), ``color_map`` (a function
    from a float in [0, 1] to ``(r, g, b[, a])`` floats, as matplotlib's maps; by default
    ``tab20b``). ``file``: where to print (standard output).

    >>> import nxpy as nx
    >>> mesh = nx.Mesh("m", (2, 2), axis_names=("x", "y"))
    >>> x = nx.device_put(nx.iota((4, 8)), nx.NamedSharding(mesh, nx.P("x", "y")))
    >>> nx.visualize_sharding(x, scale=0.5)
    ┌──────────┬──────────┐
    │  CPU 0   │  CPU 1   │
    ├──────────┼──────────┤
    │  CPU 2   │  CPU 3   │
    └──────────┴──────────┘
    >>> from nxpy.defn import jit
    >>> f = jit(lambda a: nx.visualize_sharding(nx.sum(a, axes=[0])) or a, compiler="exla")
    >>> _ = f(x)
    ┌───────┬───────┐
    │CPU 0,2│CPU 1,3│
    └───────┴───────┘
    >>> nx.visualize_sharding(nx.iota((2, 2, 2)))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: visualize_sharding: x must have rank 1 or 2 (a row of blocks or a grid),
    got shape (2, 2, 2) (rank 3)
    """
    if sharding is None or isinstance(x, Tensor):
        if sharding is not None:
            raise TypeError(f"visualize_sharding: a tensor carries its sharding; pass "
                            f"sharding only with a shape, got sharding={sharding!r}")
        view = _view(x, "visualize_sharding")
    else:
        view = _shape_view(x, sharding)
    if len(view.shape) not in (1, 2):
        raise ValueError(f"visualize_sharding: x must have rank 1 or 2 (a row of blocks or a "
                         f"grid), got shape {view.shape} (rank {len(view.shape)})")
    if not isinstance(use_color, bool):
        raise TypeError(f"visualize_sharding: expected use_color to be a bool, got "
                        f"{_describe(use_color)}")
    if not isinstance(scale, numbers.Real) or isinstance(scale, bool) or not (
            math.isfinite(scale) and scale > 0):
        raise ValueError(f"visualize_sharding: expected scale to be a positive number, got "
                         f"{scale!r}")
    for name, v in (("min_width", min_width), ("max_width", max_width)):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
            raise ValueError(f"visualize_sharding: expected {name} to be a positive int, "
                             f"got {v!r}")
    if color_map is not None and not callable(color_map):
        raise TypeError(f"visualize_sharding: expected color_map to be a function from a "
                        f"float in [0, 1] to (r, g, b[, a]), got {_describe(color_map)}")
    file = sys.stdout if file is None else file
    if not callable(getattr(file, "write", None)):
        raise TypeError(f"visualize_sharding: expected file to have a write method (a text "
                        f"stream), got {_describe(file)}")
    color, truecolor = _terminal_colors(file) if use_color else (False, False)
    file.write(render(view, use_color=color, scale=float(scale), min_width=int(min_width),
                      max_width=int(max_width), color_map=color_map, truecolor=truecolor))


def inspect_sharding(x, *, callback) -> None:
    """Calls ``callback`` with the sharding of ``x`` (a tensor or a container of them: once
    per tensor), as ``jax.debug.inspect_array_sharding``: at once for a value, and when
    the function is traced for a traced value (what :func:`visualize_sharding` draws).
    The sharding is an :class:`~nxpy.NamedSharding`, or None for a tensor on one device
    (its ``.sharding``).

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> mesh = nx.Mesh("m", (2, 2), axis_names=("x", "y"))
    >>> x = nx.device_put(nx.iota((4, 4)), nx.NamedSharding(mesh, nx.P("x", "y")))
    >>> _ = jit(lambda a: nx.inspect_sharding(a.T, callback=print) or a)(x)
    NamedSharding(mesh=Mesh('m', [x=2, y=2]), spec=P('y', 'x'))
    >>> nx.inspect_sharding([x, nx.iota((2,))], callback=lambda s: print(s and s.spec))
    P('x', 'y')
    None
    """
    if not callable(callback):
        raise TypeError(f"inspect_sharding: expected callback to be a function of one "
                        f"sharding, got {_describe(callback)}")
    try:
        leaves, _ = flatten(x)
    except TypeError:  # unhashable static data: no container of tensors
        leaves = None
    if not leaves:
        raise TypeError(f"inspect_sharding: expected x to be an nx.Tensor or a container of "
                        f"them, got {_describe(x)}")
    for leaf in leaves:
        callback(_view(leaf, "inspect_sharding").sharding)

