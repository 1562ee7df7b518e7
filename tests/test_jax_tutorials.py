"""JAX's sharding tutorials, ported as written (issue 45's acceptance corpus): each example of
tests/jax_tutorials/ runs with JAX and, its names ported (``jax_tutorials.port``), with nxpy;
values, shardings, pictures and printed text are compared with JAX's. Where an example
comes from, and why one cannot run yet, is in tests/jax_tutorials/ (each module names its
tutorial file, the JAX commit and the section of every example). The whole corpus runs on
both legs: it is a corpus of JAX's programs, whose behaviour moves with JAX's version."""
import pytest

import nxpy as nx

from helpers import close
from jax_tutorials import (check, distributed_arrays, distributed_data_loading,
                           explicit_sharding, jep_14273, jep_17111, parallel, port,
                           shard_map, sharded_computation, training_cookbook)

TUTORIALS = (shard_map, sharded_computation, distributed_arrays, explicit_sharding, parallel,
             training_cookbook, distributed_data_loading, jep_14273, jep_17111)
EXAMPLES = [ex for t in TUTORIALS for ex in t.EXAMPLES]


def _param(ex):
    marks = [pytest.mark.xfail(strict=True, reason=ex.xfail)] if ex.xfail else []
    return pytest.param(ex, id=ex.name, marks=marks)


@pytest.mark.parametrize("ex", [_param(ex) for ex in EXAMPLES])
def test_jax_tutorial_corpus(ex):
    check(ex, close)


def test_corpus_names_are_unique_and_say_where_they_come_from():
    names = [ex.name for ex in EXAMPLES]
    assert len(names) == len(set(names))
    for t in TUTORIALS:
        assert t.SOURCE.startswith("jax-ml/jax "), t.__name__
        assert len(t.EXAMPLES) >= 2, t.__name__
    for ex in EXAMPLES:
        assert ex.where and ex.name.split(":")[0] in {t.__name__.split(".")[-1] for t in TUTORIALS}
        assert not ex.xfail or ex.xfail.startswith(("issue 45 ", "not in issue 45: ")), ex.name


def test_the_port_changes_only_names():
    code = ("import jax\nimport jax.numpy as jnp\nfrom jax.sharding import PartitionSpec as P\n"
            "mesh = jax.make_mesh((8,), ('x',))\n"
            "f = jax.jit(jax.shard_map(lambda a: jax.lax.psum(jnp.sin(a), 'x'), mesh=mesh,\n"
            "            in_specs=P('x'), out_specs=P()))\n")
    assert port(code) == (
        "import nxpy as nx\nfrom nxpy.defn import jit, psum, shard_map\n"
        "import nxpy.numpy as xnp\nfrom nxpy import PartitionSpec as P\n"
        "mesh = nx.make_mesh((8,), ('x',))\n"
        "f = jit(shard_map(lambda a: psum(xnp.sin(a), 'x'), mesh=mesh,\n"
        "            in_specs=P('x'), out_specs=P()))")
    assert nx.P is nx.PartitionSpec
