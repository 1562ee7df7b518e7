"""The benchmark machinery: a registry of cases, a timer, and the table.

A *case* compares nxpy with JAX on one task. It is a setup function registered with
:func:`case`; called with the run's :class:`Config`, it builds both sides and returns a
:class:`Pair` of zero-argument callables, each doing the measured work once. The
runner times the two callables in interleaved rounds and prints one table row per
case: nxpy's time, JAX's time, their ratio and the case's aim.

Adding a benchmark (sharded programs, collectives, ...) is one decorated function in a
module listed in :data:`bench.CASE_MODULES`::

    @case("allgather_2x2", "all_gather on a 2x2 mesh, 4x4 f32", aim=2.0, devices=4)
    def allgather(cfg):
        ...
        return Pair(nxpy=lambda: h(args), jax=lambda: jf(x))

A setup may raise :class:`Skip` (e.g. too few devices); the row then says why.
"""
from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["Case", "Pair", "Skip", "Config", "Result", "REGISTRY", "case", "start_xla",
           "measure_pair", "run_cases", "format_table", "fmt_time"]


@dataclass
class Config:
    """How hard to measure. ``round_seconds``: the target length of one timed round
    (the number of calls per round is calibrated to reach it); ``rounds``: timed rounds
    per side; the reported time is the median over rounds of the per-call time."""

    quick: bool = False
    rounds: int = 7
    round_seconds: float = 0.25
    warmup_seconds: float = 0.1

    @classmethod
    def make(cls, quick: bool) -> "Config":
        if quick:
            return cls(quick=True, rounds=3, round_seconds=0.02, warmup_seconds=0.01)
        return cls()

    def for_case(self, c: "Case") -> "Config":
        """The configuration case ``c`` is measured with: its own rounds and round length
        if it sets them, in a full run (a quick run is short for every case)."""
        if self.quick or (c.rounds is None and c.round_seconds is None):
            return self
        return Config(quick=False, rounds=c.rounds or self.rounds,
                      round_seconds=c.round_seconds or self.round_seconds,
                      warmup_seconds=min(self.warmup_seconds, c.round_seconds or 1.0))


@dataclass
class Pair:
    """The two sides of a case: zero-argument callables doing the work once each.
    ``info`` is a short note printed under the table (e.g. what exactly is timed)."""

    nxpy: Callable[[], object]
    jax: Callable[[], object]
    info: str = ""


class Skip(Exception):
    """Raised by a setup that cannot run here; the message says why."""


@dataclass
class Case:
    name: str
    title: str
    setup: Callable[[Config], Pair]
    aim: float | None = None  # the largest acceptable nxpy/JAX ratio; None: informational
    devices: int = 1  # devices the case needs (checked before setup)
    rounds: int | None = None  # full runs: this case's own rounds per side ...
    round_seconds: float | None = None  # ... and round length (None: the run's)


REGISTRY: dict[str, Case] = {}


def case(name: str, title: str, *, aim: float | None = None, devices: int = 1,
         rounds: int | None = None, round_seconds: float | None = None):
    """Decorator registering ``setup(cfg) -> Pair`` as benchmark ``name``. ``rounds`` and
    ``round_seconds`` override the run's in a full run (e.g. more, shorter rounds, so the
    two sides alternate more finely when the machine's speed drifts)."""
    def deco(setup):
        if name in REGISTRY:
            raise ValueError(f"benchmark {name!r} is registered twice")
        REGISTRY[name] = Case(name, title, setup, aim, devices, rounds, round_seconds)
        return setup
    return deco


def start_xla() -> list:
    """Starts XLA through nxpy (so nxpy's device count applies: NXPY_CPU_DEVICES, default
    8), then checks that JAX uses the very same client. Must run before any JAX call."""
    from nxpy import pjrt
    devices = pjrt.devices()
    import jax
    if list(jax.devices()) != list(devices):
        raise RuntimeError(f"JAX and nxpy see different devices ({jax.devices()} vs "
                           f"{devices}): JAX was used before nxpy started the XLA client")
    return devices


# ----------------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------------
def _time_calls(fn, n: int) -> float:
    """Seconds for ``n`` calls of ``fn``, with the garbage collector off (as timeit)."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return time.perf_counter() - t0
    finally:
        if gc_was_enabled:
            gc.enable()


def _calibrate(fn, cfg: Config) -> int:
    """Warms ``fn`` up, then returns the number of calls that fills one round."""
    deadline = time.perf_counter() + cfg.warmup_seconds
    fn()
    while time.perf_counter() < deadline:
        fn()
    n = 1
    while True:
        t = _time_calls(fn, n)
        if t >= cfg.round_seconds / 4 or n >= 1 << 24:
            return max(1, int(n * cfg.round_seconds / max(t, 1e-9)))
        n *= 4


@dataclass
class Result:
    case: Case
    nxpy: list[float] = field(default_factory=list)  # per-call seconds, one per round
    jax: list[float] = field(default_factory=list)
    info: str = ""
    skipped: str = ""

    @property
    def nxpy_time(self) -> float:
        return statistics.median(self.nxpy)

    @property
    def jax_time(self) -> float:
        return statistics.median(self.jax)

    @property
    def ratio(self) -> float:
        return self.nxpy_time / self.jax_time

    @property
    def min_ratio(self) -> float:
        """The ratio of the two sides' fastest rounds (less sensitive to a busy machine)."""
        return min(self.nxpy) / min(self.jax)

    @property
    def met(self) -> bool | None:
        return None if self.case.aim is None else self.ratio <= self.case.aim


def measure_pair(pair: Pair, cfg: Config) -> tuple[list[float], list[float]]:
    """Per-call times of both sides, one per round; rounds alternate between the sides
    so that drift in the machine's speed affects both alike."""
    n_nx, n_jax = _calibrate(pair.nxpy, cfg), _calibrate(pair.jax, cfg)
    nx_times, jax_times = [], []
    for _ in range(cfg.rounds):
        gc.collect()
        nx_times.append(_time_calls(pair.nxpy, n_nx) / n_nx)
        gc.collect()
        jax_times.append(_time_calls(pair.jax, n_jax) / n_jax)
    return nx_times, jax_times


def run_cases(cases, cfg: Config, device_count: int, progress=None) -> list[Result]:
    results = []
    for c in cases:
        if progress:
            progress(c)
        r = Result(c)
        if c.devices > device_count:
            r.skipped = f"needs {c.devices} devices, have {device_count}"
        else:
            ccfg = cfg.for_case(c)
            try:
                pair = c.setup(ccfg)
            except Skip as e:
                r.skipped = str(e)
            else:
                r.info = pair.info
                r.nxpy, r.jax = measure_pair(pair, ccfg)
                del pair  # free the case's arrays before the next one
        results.append(r)
    return results


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------
def fmt_time(s: float) -> str:
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def format_table(results: list[Result]) -> str:
    head = ("case", "benchmark", "nxpy", "JAX", "nxpy/JAX", "min/min", "aim", "")
    rows = []
    for r in results:
        aim = "-" if r.case.aim is None else f"<= {r.case.aim:g}x"
        if r.skipped:
            rows.append((r.case.name, r.case.title, "skipped", r.skipped, "", "", aim, ""))
            continue
        ok = "" if r.met is None else ("met" if r.met else "MISSED")
        rows.append((r.case.name, r.case.title, fmt_time(r.nxpy_time), fmt_time(r.jax_time),
                     f"{r.ratio:.2f}x", f"{r.min_ratio:.2f}x", aim, ok))
    widths = [max(len(row[i]) for row in [head] + rows) for i in range(len(head))]
    right = {2, 3, 4, 5}

    def line(row):
        return "  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                         for i, (cell, w) in enumerate(zip(row, widths))).rstrip()

    out = [line(head), line(tuple("-" * w for w in widths))]
    out += [line(row) for row in rows]
    return "\n".join(out)
