"""``python -m bench [--quick] [--only NAME,...] [--list] [--profile NAME]``."""
from __future__ import annotations

import argparse
import os
import platform
import sys
import textwrap
import time

from . import core


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m bench",
                                description="nxpy vs JAX, side by side, as ratios")
    p.add_argument("--quick", action="store_true",
                   help="short rounds, 3 per side: a few seconds, noisier numbers")
    p.add_argument("--only", default="",
                   help="comma-separated case names to run (see --list; 'first_call': the "
                        "first call in fresh processes, cold and with a warm disk cache)")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--profile", metavar="NAME",
                   help="cProfile the nxpy side of case NAME instead of timing")
    return p.parse_args(argv)


def _profile(c, cfg):
    import cProfile
    import pstats
    pair = c.setup(cfg)
    n = core._calibrate(pair.nxpy, core.Config(round_seconds=1.0))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        pair.nxpy()
    prof.disable()
    print(f"cProfile of the nxpy side of {c.name!r}, {n} calls (times include "
          f"profiler overhead):")
    pstats.Stats(prof).sort_stats("tottime").print_stats(20)


def main(argv=None) -> int:
    args = _parse(argv)
    import nxpy  # noqa: F401 - nxpy first: it starts XLA with its device count
    devices = core.start_xla()
    import jax

    from . import load_cases
    registry = load_cases()
    if args.list:
        for c in registry.values():
            aim = f"aim <= {c.aim:g}x" if c.aim is not None else "informational"
            print(f"{c.name:26} {c.title}  ({aim})")
        return 0
    cfg = core.Config.make(args.quick)
    if args.profile:
        if args.profile not in registry:
            print(f"unknown case {args.profile!r}; see --list", file=sys.stderr)
            return 2
        _profile(registry[args.profile], cfg)
        return 0
    names = [n for n in args.only.split(",") if n] or list(registry)
    unknown = [n for n in names if n not in registry and n != "first_call"]
    if unknown:
        print(f"unknown case(s) {', '.join(unknown)}; see --list", file=sys.stderr)
        return 2

    print(f"nxpy vs JAX — Python {platform.python_version()}, jax {jax.__version__}, "
          f"{os.cpu_count()} CPU cores, XLA {devices[0].platform} client with "
          f"{len(devices)} devices shared by both")
    print(f"mode: {'quick' if cfg.quick else 'full'} — per side {cfg.rounds} rounds of "
          f"~{cfg.round_seconds * 1e3:g} ms after warm-up, rounds interleaved, GC off "
          f"inside rounds; times are the median per call")
    own = {}
    for n in names:
        if n not in registry:
            continue
        ccfg = cfg.for_case(registry[n])
        if ccfg is not cfg:
            own.setdefault((ccfg.rounds, ccfg.round_seconds), []).append(n)
    for (rounds, secs), cases in own.items():
        print(textwrap.fill(f"{rounds} rounds of ~{secs * 1e3:g} ms instead for "
                            f"{', '.join(cases)}", 92, subsequent_indent="  "))
    print()
    t0 = time.perf_counter()
    results = core.run_cases([registry[n] for n in names if n in registry], cfg, len(devices),
                             progress=lambda c: print(f"  running {c.name} ...",
                                                      file=sys.stderr, flush=True))
    print(core.format_table(results))
    print()
    for r in results:
        if r.info:
            print(f"* {r.case.name}: {r.info}")
    if not args.only or "first_call" in names:
        from .call_path import print_first_call_table
        print()
        print_first_call_table()
    print(f"\nratio = nxpy time / JAX time (lower is better for nxpy), of the median rounds; "
          f"min/min: of the fastest rounds; total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
