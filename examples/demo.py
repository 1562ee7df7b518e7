"""nxpy in one page: a numerical definition traced to an Expr graph, lowered to
StableHLO, and run by both compilers (the Evaluator and EXLA). Run with `make demo`.

The program: softmax over the rows of a matrix of logits, then a while loop that
halves the temperature until every row's largest probability reaches a target (at
most 10 halvings).
"""
import numpy as np

import nxpy as nx
from nxpy.backends.exla import to_mlir
from nxpy.defn import debug_expr, defn, jit


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

    heading("StableHLO: nxpy.backends.exla.to_mlir(sharpen, logits, target)")
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

    # ---------------------------------------------------------------------------------
    # More sections go here (sharding on a device mesh is next): append them below,
    # each starting with heading("...").
    # ---------------------------------------------------------------------------------


if __name__ == "__main__":
    main()
