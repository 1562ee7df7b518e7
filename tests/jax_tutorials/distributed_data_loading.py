"""Examples from JAX's "Distributed data loading" (docs/distributed_data_loading.md).

Copyright 2023 The JAX Authors, Apache-2.0; read at the commit below. The page has two code
blocks (``B2``, ``B4``: its second and fourth fenced blocks, verbatim), both reading a
``tf.data`` pipeline: the tests give them a stand-in for the three calls they make
(tensorflow is not installed), the same for JAX and nxpy. Run in one process, each is the
one-process case of the page's multi-process recipe."""
from jax_tutorials import example

SOURCE = "jax-ml/jax cec06d116c05f0d52adfceee3d3b730fdbcb0ce5 docs/distributed_data_loading.md"

#: § Important trick about data parallelism
B2 = r'''
import jax
import tensorflow as tf
import numpy as np

################################################################################
# Step 1: setup the Dataset for pure data parallelism (do once)
################################################################################
# Fake example data (replace with your Dataset)
ds = tf.data.Dataset.from_tensor_slices(
    [np.ones((16, 3)) * i for i in range(100)])

ds = ds.shard(num_shards=jax.process_count(), index=jax.process_index())

################################################################################
# Step 2: create a jax.Array of per-replica batches from the per-process batch
# produced from the Dataset (repeat every step). This can be used with batches
# produced by different data loaders as well!
################################################################################
# Grab just the first batch from the Dataset for this example
per_process_batch = ds.as_numpy_iterator().next()

mesh = jax.make_mesh((jax.device_count(),), ('batch',))
sharding = jax.NamedSharding(mesh, jax.sharding.PartitionSpec('batch'))
global_batch_array = jax.make_array_from_process_local_data(
    sharding, per_process_batch)
'''

#: § Model parallelism within a process
B4 = r'''
import jax
import tensorflow as tf
import numpy as np

################################################################################
# Step 1: Set up the Dataset with a different data shard per-process (do once)
#         (same as for pure data parallelism)
################################################################################
# Fake example data (replace with your Dataset)
per_process_batches = [np.ones((16, 3)) * i for i in range(100)]
ds = tf.data.Dataset.from_tensor_slices(per_process_batches)

ds = ds.shard(num_shards=jax.process_count(), index=jax.process_index())

################################################################################
# Step 2: Create a jax.Array of per-replica batches from the per-process batch
# produced from the Dataset (repeat every step)
################################################################################
# Grab just the first batch from the Dataset for this example
per_process_batch = ds.as_numpy_iterator().next()

num_model_replicas_per_process = 2 # set according to your parallelism strategy
num_model_replicas_total = num_model_replicas_per_process * jax.process_count()

# Create an example `Mesh` for per-process data parallelism. Make sure all devices
# are grouped by process, and then resize so each row is a model replica.
mesh_devices = np.array([jax.local_devices(process_idx)
                         for process_idx in range(jax.process_count())])
mesh_devices = mesh_devices.reshape(num_model_replicas_total, -1)
# Double check that each replica's devices are on a single process.
for replica_devices in mesh_devices:
  num_processes = len(set(d.process_index for d in replica_devices))
  assert num_processes == 1
mesh = jax.sharding.Mesh(mesh_devices, ["model_replicas", "data_parallelism"])

# Shard the data across model replicas. You don't shard across the
# data_parallelism mesh axis, meaning each per-replica shard will be replicated
# across that axis.
sharding = jax.sharding.NamedSharding(
    mesh, jax.sharding.PartitionSpec("model_replicas"))

global_batch_array = jax.make_array_from_process_local_data(
    sharding, per_process_batch)
'''


#: tf.data's calls the page makes, over a list (tensorflow is not installed here)
TF = (("import tensorflow as tf", """class tf:  # a stand-in for tf.data: the calls the page makes
  class data:
    class Dataset:
      def __init__(self, items):
        self.items = list(items)
      @classmethod
      def from_tensor_slices(cls, items):
        return cls(items)
      def shard(self, num_shards, index):
        return type(self)(self.items[index::num_shards])
      def as_numpy_iterator(self):
        items = iter(self.items)
        return type("NumpyIterator", (), {"next": lambda self: next(items)})()""",
       "tensorflow's tf.data (not installed): a stand-in for its three calls"),)
#: the page's f64 batches as JAX takes them (f32)
F32 = (("np.ones((16, 3)) * i", "(np.ones((16, 3)) * i).astype(np.float32)",
        "a NumPy f64 array stays 64-bit in nxpy (JAX without x64 narrows it)"),)

EXAMPLES = [
    example("distributed_data_loading:data_parallelism", "§ Important trick about data "
            "parallelism (block 2)", B2, values=("global_batch_array",),
            shardings=("global_batch_array",), edits=TF, deviations=F32),
    example("distributed_data_loading:model_parallelism_within_a_process", "§ Model "
            "parallelism within a process (block 4)", B4, values=("global_batch_array",),
            shardings=("global_batch_array",), edits=TF, deviations=F32,
            xfail="not in issue 45: jax.local_devices(process_index)"),
]
