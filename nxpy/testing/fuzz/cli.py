"""The command line, ``python -m nxpy.testing.fuzz`` (``make fuzz N=... SEED=...``)::

    python -m nxpy.testing.fuzz --seed 0 --count 1000      # fuzz (vmap too), report mismatches
    python -m nxpy.testing.fuzz --seed 0 --count 1000 --vmap-every 0  # without vmap
    python -m nxpy.testing.fuzz --seed 0 --index 17 --show  # one program, described
    python -m nxpy.testing.fuzz --seed 0 --index 17 --vmap --show  # with its batch
    python -m nxpy.testing.fuzz --sharded --seed 0 --index 19 --show  # one sharded program
    python -m nxpy.testing.fuzz --seed 0 --count 20 --compiler iree  # a plugin compiler too

``docs/fuzzing.md`` says how to read a mismatch and reproduce it."""
from __future__ import annotations

import argparse
import sys
import time
import warnings

import nxpy as nx
from ... import pjrt
from .checks import vmap_spec
from .generator import generate
from .program import Mismatch
from .run import check, run_many
from .sharded import generate_sharded

__all__ = ["main"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nxpy.testing.fuzz",
                                 description="Differential fuzzing: seeded random programs, run "
                                             "every way nxpy can run them and compared with one "
                                             "another and with JAX.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--index", type=int, help="one program (with --show: print it)")
    ap.add_argument("--sharded", action="store_true", help="with --index: the sharded program")
    ap.add_argument("--vmap", action="store_true",
                    help="with --index: check vmap of the program too "
                         "(with --show: print the batch)")
    ap.add_argument("--vmap-every", type=int, default=1, metavar="N",
                    help="when fuzzing: check vmap of every N-th program (0: none; default 1)")
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--compiler", action="append", default=[], metavar="NAME",
                    help="one more path: jit with this compiler (a plugin's name, e.g. iree; "
                         "repeatable), on the single-device programs")
    a = ap.parse_args(argv)
    if a.vmap and a.sharded:
        ap.error("--vmap: sharded programs are not batched")
    pjrt.oracle()
    warnings.simplefilter("ignore")
    if a.index is not None:
        prog = (generate_sharded if a.sharded else generate)(a.seed, a.index)
        if a.show:
            print(prog)
            if a.vmap:
                print(vmap_spec(prog).describe(prog))
        try:
            check(prog, vmap=a.vmap, compilers=a.compiler)
        except Mismatch as err:
            print(f"MISMATCH {err}")
            return 1
        print("ok")
        return 0
    t0 = time.perf_counter()
    for name in a.compiler:  # an unknown name fails here, not as a mismatch per program
        nx.plugins.COMPILERS.get(name)
    found = run_many(a.seed, a.count, a.start, out=sys.stdout, vmap_every=a.vmap_every,
                     compilers=a.compiler)
    print(f"fuzzed {a.count} programs (seed {a.seed}, from {a.start}) in "
          f"{time.perf_counter() - t0:.0f} s: {len(found)} mismatch(es)")
    return 1 if found else 0
