"""nxpy in one page: a numerical definition traced to an Expr graph, lowered to
StableHLO, and run by both compilers (the Evaluator and EXLA). Run with `make demo`.

The program: softmax over the rows of a matrix of logits, then a while loop that
halves the temperature until every row's largest probability reaches a target (at
most 10 halvings). Then the same spine sharded: a defn with a real all_gather under
shard_jit across a 2x2 mesh of 4 CPU devices, on both compilers, and a shard_map.
"""
import numpy as np

import nxpy as nx
from nxpy.compilers.exla import to_mlir
from nxpy.defn import (all_gather, axis_index, debug_expr, defn, jit, psum, shard_jit,
                       shard_map)
from nxpy.defn.sharding import assemble, shard


def softmax(x):
    """Row-wise softmax (plain Python: inlined into whichever defn calls it)."""
    e = nx.exp(x - nx.reduce_max(x, axes=[1], keep_axes=True))
    return e / nx.sum(e, axes=[1], keep_axes=True)


@defn  # default compiler: the Evaluator
def sharpen(logits, target):
    def not_sharp_yet(state):
        i, temperature, probs = state
        top = nx.reduce_max(probs, axes=[1])
        return nx.logical_and(i < 10, nx.reduce_min(top) < target)

    def halve(state):
        i, temperature, probs = state
        temperature = temperature / 2
        return i + 1, temperature, softmax(logits / temperature)

    i, temperature, probs = nx.while_loop(not_sharp_yet, halve, (0, 1.0, softmax(logits)))
    return {"probs": probs, "temperature": temperature, "halvings": i}


LOGITS = [[1.0, 2.0, 3.0],
          [0.5, 0.0, 1.0]]
TARGET = 0.9


def heading(title):
    print(f"\n=== {title} " + "=" * max(0, 72 - len(title)))


def compact(a):
    """Nested lists on one line, 6 significant digits."""
    if a.ndim == 0:
        return f"{a.item():.6g}"
    return "[" + ", ".join(compact(x) for x in a) + "]"


def show_results(label, out):
    print(f"{label}:")
    for key, t in out.items():
        values = compact(np.asarray(t))
        shape = "".join(f"[{d}]" for d in t.shape)
        print(f"  {key:12} {t.type}{shape:8} on {t.backend.name}: {values}")


def main():
    logits = nx.tensor(LOGITS)  # f32[2][3] on the default (NumPy) backend

    heading("Program")
    print(f"sharpen(logits, target={TARGET}) with logits =\n{logits}")

    heading("Expr graph: debug_expr(sharpen)(logits, target)['probs']")
    # every output prints the whole graph; the other two are elems 1 and 0 of node h
    print(debug_expr(sharpen)(logits, TARGET)["probs"])

    heading("StableHLO: nxpy.compilers.exla.to_mlir(sharpen, logits, target)")
    print(to_mlir(sharpen, logits, TARGET))

    heading("Run on the Evaluator (default compiler, NumPy backend)")
    on_host = sharpen(logits, TARGET)
    show_results("Evaluator", on_host)

    heading("Run on EXLA: jit(sharpen, compiler='exla'), tensors on the exla backend")
    on_xla = jit(sharpen, compiler="exla")(nx.tensor(LOGITS, backend="exla"), TARGET)
    show_results("EXLA", on_xla)

    heading("Evaluator vs EXLA")
    diff = max(float(np.max(np.abs(np.asarray(on_host[k]) - np.asarray(on_xla[k]))))
               for k in on_host)
    print(f"largest absolute difference over all outputs: {diff:.3g}")

    sharded_sections()


# -------------------------------------------------------------------------------------
# Sharding across a 2x2 mesh of 4 CPU devices
# -------------------------------------------------------------------------------------
def scale_and_gather(x, y):
    """Global view: x and y are global tensors; all_gather makes dim 0 replicated."""
    return all_gather((x + y) * 10, all_gather_dim=0)


def per_device_lines(results):
    for p, t in enumerate(results):
        print(f"  partition {p} (device {t.device_id}, mesh coords {MESH.coords(p)}): "
              f"{t.type}{''.join(f'[{d}]' for d in t.shape)} {np.asarray(t).tolist()}")


MESH = None


def sharded_sections():
    global MESH
    MESH = nx.Mesh("mesh", (2, 2))  # axes "axis_0", "axis_1"; partition p = 2*a0 + a1
    sharding = {0: [0], 1: [1]}     # dim 0 over axis_0, dim 1 over axis_1
    x = nx.iota((4, 2))
    y = nx.full((4, 2), 100)
    # one argument list per device, in partition order, each holding that device's shards
    args = [list(p) for p in zip(shard(x, MESH, sharding), shard(y, MESH, sharding))]

    heading("Sharded: shard_jit(scale_and_gather) over a 2x2 mesh, global view")
    print(f"x = {np.asarray(x).tolist()}, y = 100 everywhere; both sharded {sharding}")
    print("per-device arguments (x shard, y shard):")
    for p, (a, b) in enumerate(args):
        print(f"  partition {p}: {np.asarray(a).tolist()}, {np.asarray(b).tolist()}")

    heading("Sharded: the Expr graph (traced at global shapes, under the mesh)")
    print(shard_jit(scale_and_gather, MESH, input_shardings=[sharding, sharding]).debug_expr(args))

    heading("Sharded: the module (note stablehlo.all_gather and its replica groups)")
    print(to_mlir(scale_and_gather, args, mesh=MESH, input_shardings=[sharding, sharding]))

    results = {}
    for compiler in ("exla", "evaluator"):
        f = shard_jit(scale_and_gather, MESH, input_shardings=[sharding, sharding],
                      compiler=compiler)
        results[compiler] = f(args)
        heading(f"Sharded: per-device results from {compiler}")
        print(f"result sharding reported by the compiled function: {f.output_shardings}")
        per_device_lines(results[compiler])
    same = all(np.array_equal(np.asarray(a), np.asarray(b)) and a.device_id == b.device_id
               for a, b in zip(results["exla"], results["evaluator"]))
    print(f"\nEXLA and the Evaluator agree on every device: {same}")
    assembled = assemble(results["exla"], MESH, {1: [1]})
    print("assembled global result:", np.asarray(assembled).tolist())

    heading("Local view: shard_map with psum and axis_index (JAX semantics)")
    mesh = nx.Mesh("xy", (2, 2), axis_names=("x", "y"))
    body = shard_map(lambda a: psum(a * (axis_index("x") + 1), "x"), mesh,
                     in_specs=("x", "y"), out_specs=(None, "y"), compiler="exla")
    v = nx.tensor([[1, 2], [3, 4]])
    print(f"each device sees a 1x1 shard of {np.asarray(v).tolist()}, multiplies it by its "
          f"index along 'x' plus one, and sums over 'x':")
    print("  result:", np.asarray(body(v)).tolist(), " (= [1*1 + 3*2, 2*1 + 4*2])")


if __name__ == "__main__":
    main()
