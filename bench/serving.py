"""``nxpy.serving`` under concurrent clients: throughput and latency of a 2-layer MLP
(1024 wide, f32) served to 64 client threads with ``batch_size`` 1, 8 and 64, against
calling the jitted function once per request under a lock (what one writes without a
serving). Each client sends one example at a time and waits for its answer.

Run ``python -m bench.serving`` (``--quick`` for a short run, ``--clients``,
``--requests``); it prints the table of bench/README.md's serving section. Not a case of
``python -m bench`` (which compares nxpy with JAX): here nxpy is compared with itself.
"""
from __future__ import annotations

import argparse
import os
import threading
import time

import numpy as np

WIDTH = 1024


def model_fn():
    """``(batched function, reference)``: relu(x @ W1 + b1) @ W2 + b2, 1024 wide."""
    from nxpy import nn
    r = np.random.default_rng(0)
    w1 = (r.standard_normal((WIDTH, WIDTH)) / 32).astype(np.float32)
    w2 = (r.standard_normal((WIDTH, WIDTH)) / 32).astype(np.float32)
    b1, b2 = np.zeros(WIDTH, np.float32), np.zeros(WIDTH, np.float32)

    def mlp(x):
        return nn.relu(x @ w1 + b1) @ w2 + b2

    def ref(x):
        return np.maximum(x @ w1 + b1, 0) @ w2 + b2
    return mlp, ref


def _drive(clients: int, requests: int, call) -> dict:
    """``clients`` threads each make ``requests`` calls one after another; requests/s
    over the whole run and per-call latency percentiles."""
    lat = [[] for _ in range(clients)]
    gate = threading.Barrier(clients + 1)
    xs = np.random.default_rng(1).standard_normal((clients, WIDTH)).astype(np.float32)

    def client(i):
        x = xs[i:i + 1]
        gate.wait(120)
        for _ in range(requests):
            t0 = time.perf_counter()
            call(x)
            lat[i].append(time.perf_counter() - t0)
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    gate.wait(120)
    t0 = time.perf_counter()
    for t in threads:
        t.join(600)
    wall = time.perf_counter() - t0
    all_lat = np.concatenate([np.array(v) for v in lat]) * 1e3
    return {"rps": clients * requests / wall, "p50_ms": float(np.percentile(all_lat, 50)),
            "p99_ms": float(np.percentile(all_lat, 99))}


def run(clients: int = 64, requests: int = 20, batch_sizes=(1, 8, 64),
        batch_timeout: float = 0.01, rounds: int = 1) -> list[dict]:
    """One row per setting: ``{"what", "rps", "p50_ms", "p99_ms", "batches"}``; with
    several ``rounds`` the settings take turns (a load that comes and goes on a shared
    machine hits them alike) and each figure is the median over the rounds."""
    import nxpy as nx  # noqa: F401 - starts XLA
    from nxpy.defn import jit
    from nxpy.serving import Batch, Serving
    mlp, ref = model_fn()
    f = jit(mlp, compiler="exla")
    x = np.random.default_rng(2).standard_normal((1, WIDTH)).astype(np.float32)
    np.testing.assert_allclose(f(x).to_numpy(), ref(x), rtol=1e-4, atol=1e-4)
    lock = threading.Lock()

    def per_request(x):
        with lock:
            return f(x).to_numpy()
    servings = [Serving(f, batch_size=bs, batch_timeout=batch_timeout).start()
                for bs in batch_sizes]
    try:
        calls = [("jitted function per request, under a lock", per_request, None)]
        for bs, s in zip(batch_sizes, servings):
            got = s.batched_run(Batch.concatenate([x]), timeout=120)  # compiled
            np.testing.assert_allclose(got.to_numpy(), ref(x), rtol=1e-4, atol=1e-4)
            calls.append((f"Serving, batch_size={bs}",
                          lambda x, s=s: s.batched_run(Batch.concatenate([x]), timeout=120), s))
        _drive(min(clients, 8), 2, per_request)  # warm
        seen = {name: [] for name, _, _ in calls}
        for _ in range(rounds):
            for name, call, s in calls:
                before = s.stats()["batches"] if s is not None else 0
                res = _drive(clients, requests, call)
                res["batches"] = (s.stats()["batches"] - before if s is not None
                                  else clients * requests)
                seen[name].append(res)
    finally:
        for s in servings:
            s.stop()
    rows = [{"what": name, **{k: float(np.median([r[k] for r in results]))
                              for k in ("rps", "p50_ms", "p99_ms", "batches")}}
            for name, results in seen.items()]
    rows[0]["ceiling"] = ceiling(f, max(batch_sizes))
    return rows


def ceiling(f, n: int, calls: int = 30) -> dict:
    """What batching can gain at most here, without threads: the median time of ``f`` on
    one row and on ``n`` rows, and ``n * t1 / tn``."""
    def median_time(x):
        f(x).to_numpy()
        ts = []
        for _ in range(calls):
            t0 = time.perf_counter()
            f(x).to_numpy()
            ts.append(time.perf_counter() - t0)
        return float(np.median(ts))
    r = np.random.default_rng(3)
    t1 = median_time(r.standard_normal((1, WIDTH)).astype(np.float32))
    tn = median_time(r.standard_normal((n, WIDTH)).astype(np.float32))
    return {"n": n, "t1_ms": t1 * 1e3, "tn_ms": tn * 1e3, "gain": n * t1 / tn}


def table(rows, clients, requests, rounds=1, load=None) -> str:
    """The README's table; ``load``: ``os.getloadavg()`` taken before the run (by
    default, now)."""
    base = rows[0]["rps"]
    out = ["| setting | requests/s | vs per request | p50 | p99 | batches run |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['what']} | {r['rps']:,.0f} | {r['rps'] / base:.1f}x | "
                   f"{r['p50_ms']:.1f} ms | {r['p99_ms']:.1f} ms | {r['batches']:,.0f} |")
    c = rows[0].get("ceiling")
    if c:
        out.append(f"\nThe ceiling, no threads: one row takes {c['t1_ms']:.2f} ms, "
                   f"{c['n']} rows {c['tn_ms']:.2f} ms: batching gains at most "
                   f"{c['gain']:.1f}x here.")
        full = [r for r in rows if r["what"] == f"Serving, batch_size={c['n']}"]
        if full:  # what the threads and the serving's Python add to a full batch
            per = c["n"] / full[0]["rps"] * 1e3
            out.append(f"batch_size={c['n']} took {per:.2f} ms per {c['n']} requests "
                       f"against {c['tn_ms']:.2f} ms of compute: "
                       f"{(per - c['tn_ms']) / c['n'] * 1e3:.0f} µs a request of "
                       f"client threads and serving.")
    out.append(f"\n{clients} client threads x {requests} requests of one 1024-wide f32 "
               f"example each, medians of {rounds} round(s); load average "
               + (f"before the run: {_load(load)}; after it: " if load else "after the run: ")
               + _load(os.getloadavg()))
    return "\n".join(out)


def _load(avg) -> str:
    return ", ".join(f"{v:.1f}" for v in avg)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.serving", description=__doc__)
    p.add_argument("--quick", action="store_true", help="fewer requests, one round")
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--requests", type=int, default=None)
    p.add_argument("--rounds", type=int, default=None)
    a = p.parse_args(argv)
    requests = a.requests or (5 if a.quick else 20)
    rounds = a.rounds or (1 if a.quick else 5)
    load = os.getloadavg()
    print(table(run(a.clients, requests, rounds=rounds), a.clients, requests, rounds, load))


if __name__ == "__main__":
    main()
