"""Transforms of Expr graphs into Expr graphs, above ``core``: reverse mode (``grad``; its
engine in ``replay``, ``backprop`` and ``grad_bodies``, its rules in ``grad_rules``, a
loop's trip bound in ``loop_bounds``), forward mode (``jvp``, ``jvp_rules``), batching
(``vmap``, ``batch_rules``), their compositions (``jacobian``), custom derivatives
(``custom_jvp``, ``custom_vjp``), ``checkpoint``, ``call`` (a nested jit, which the
transforms see through) and ``scan``. ``nxpy.defn`` re-exports their public names."""
