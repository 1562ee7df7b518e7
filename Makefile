# `make test` and `make demo` are the whole set-up on a fresh machine: they create
# (or reuse) a virtualenv, install nxpy and a supported jax/jaxlib into it, and run.
#
# One leg per Python and jax: `make test PYTHON=python3.12 JAX=0.12.0.1` builds
# .venv-python3.12-jax0.12.0.1 (JAX empty: the newest release pip finds within
# pyproject.toml's range for that Python). The defaults use .venv.
PYTHON ?= python3
JAX ?=
LEG := $(notdir $(PYTHON))$(if $(JAX),-jax$(JAX))
VENV ?= $(if $(filter python3,$(LEG)),.venv,.venv-$(LEG))
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# bytecode is cached (some environments set PYTHONDONTWRITEBYTECODE): otherwise every
# process recompiles nxpy and every pytest worker rewrites every test module's asserts
unexport PYTHONDONTWRITEBYTECODE
# a hung run (a crashed pytest-xdist worker can leave the controller waiting) fails, not stalls
LIMIT := timeout -k 30 1800

.PHONY: iree iree-kit lint test cpu exhaustive roundtrip distributed soak fuzz demo train optax-example gpt bench gpu-check clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(if $(JAX),$(PY) -m pip install -q 'jax==$(JAX)' 'jaxlib==$(JAX)')
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -c "import jax, jaxlib, sys; print('$(VENV): Python', sys.version.split()[0], 'jax', jax.__version__, 'jaxlib', jaxlib.__version__)"
	touch $(STAMP)

# ruff: pyflakes and pycodestyle at 100 columns ([tool.ruff] in pyproject.toml)
lint: $(STAMP)
	$(PY) -m ruff check .

# SLICE: which slice of the suite (tests/helpers.py TEST_SLICE). 0, the default: every case.
# SLICE=1, CI's newest leg, and SLICE=3, its oldest: each half of each parametrized test's
# cases (every test function, every value of an outer parameter), the two halves
# complementary, the covered products rotated 1 and 3 choices on, so the two legs run every
# case and meet more pairs than one; tests of jax's own behaviour (its programs imported,
# to_jax/from_jax, its random bits, ...: tests/conftest.py WHOLE_*) whole on both
SLICE ?= 0
test: $(STAMP)
	NXPY_TEST_SLICE=$(SLICE) $(LIMIT) $(PY) -m pytest -q -n auto --dist loadgroup -m "not multiprocess and not soak"

# the suite as another x86-64 CPU computes it (tools/cpu_settings.py): NumPy's SIMD kernels,
# XLA's code generation and OpenBLAS's kernels capped at CPU=noavx512 (AVX2 and FMA),
# noavx2 (AVX only: no FMA) or baseline (NumPy's baseline kernels); no test may need one
# CPU's bits (docs/guarantees.md, "Results on every CPU"). CI runs CPU=noavx2 on a slice
# CPU_SUITES=ci: CI's share, the suites a CPU's kernels could move (the doctests, the pages'
# examples, the NumPy backend's kernels, the samplers' bits, the op tests; 3 min on 2 cores)
CPU ?= noavx2
CPU_SUITES ?= tests nxpy
CPU_CI := nxpy tests/test_cpu_independence.py tests/test_docs.py tests/test_readme.py \
	tests/test_random.py tests/test_random_distributions.py tests/test_random_gamma.py \
	tests/test_nn_initializers.py tests/test_nn.py tests/test_ops.py tests/test_ops_linalg.py \
	tests/test_ops_complex.py
cpu: $(STAMP)
	NXPY_TEST_SLICE=$(SLICE) $(LIMIT) $(PY) tools/cpu_settings.py $(CPU) $(PY) -m pytest -q -n auto --dist loadgroup -m "not multiprocess and not soak" $(if $(filter ci,$(CPU_SUITES)),$(CPU_CI),$(CPU_SUITES))

# the fast slice's covered products in full (tests/helpers.py `covering`): every case on
# every path and dtype where `make test` takes each case on one, rotating; run before a stop
# (about an hour on 2 cores: its own time limit, 2 h, not the others' 30 min)
exhaustive: $(STAMP)
	NXPY_TEST_PRODUCT=full timeout -k 30 7200 $(PY) -m pytest -q -n auto --dist loadgroup -m "not multiprocess and not soak"

# meshes across 2 and 4 processes on loopback (tests/test_distributed.py) and across two
# network namespaces (tests/test_distributed_netns.py: needs root, else skipped, -rs says why)
distributed: $(STAMP)
	$(LIMIT) $(PY) -m pytest -q -n 2 -rs -m multiprocess tests/test_distributed.py tests/test_distributed_netns.py

# the suite's op tests again (every op family and dtype, random, collectives, sharding,
# control flow), every EXLA program also emitted -> parsed -> loaded -> rerun; gradients,
# vmap and the rest of the suite build programs of the same ops (their emitter and parser
# paths are these), and the fuzzer round-trips its own. `make roundtrip ROUNDTRIP=tests`: all.
# On slice 2 (SLICE above): half of each op test's cases, every test function and every op
# family still round-tripped, the other half than the newest leg's; ROUNDTRIP_SLICE=0: all
ROUNDTRIP_SLICE ?= 2
ROUNDTRIP ?= $(filter-out tests/test_ops_compositions.py,$(wildcard tests/test_ops*.py)) \
	tests/test_random.py tests/test_collectives.py tests/test_sharding.py \
	tests/test_sharded_tensors.py tests/test_stablehlo.py tests/test_cond_clauses.py \
	tests/test_defn.py
roundtrip: $(STAMP)
	NXPY_TEST_SLICE=$(ROUNDTRIP_SLICE) $(LIMIT) $(PY) -m pytest -q -n auto --dist loadgroup -m "not multiprocess and not soak" -p nxpy.stablehlo.roundtrip $(ROUNDTRIP)

# threads, memory, cache bounds and interrupts under load (tests/test_soak.py); every
# benchmark of bench/ set up and run once, untimed (tests/test_bench.py); every function
# of jax.scipy.special, jax.nn and jax.random imported alone, in f32 and f64; the
# gradients of nxpy.numpy against jax.grad
soak: $(STAMP)
	timeout -k 30 600 $(PY) -m pytest -q -p no:xdist -m soak tests/test_soak.py tests/test_bench.py tests/test_gpu_check.py
	$(LIMIT) $(PY) -m pytest -q -n auto -m soak tests/test_import_jax_libraries.py tests/test_import_flax.py tests/test_numpy_math.py

# the differential fuzzer beyond make test's slice: make fuzz N=5000 SEED=3
N ?= 1000
SEED ?= 0
fuzz: $(STAMP)
	$(LIMIT) $(PY) -m nxpy.testing.fuzz --seed $(SEED) --count $(N)

# nxpy on a CUDA GPU (bench/gpu_check.py): lowering for CUDA anywhere; on a machine with a
# GPU and jax's CUDA plugin, a slice of the suite, the demo and a benchmark against JAX
gpu-check: $(STAMP)
	timeout -k 30 900 $(PY) -m bench.gpu_check

# the IREE compiler plugin (plugins/nxpy-iree): its IREE wheels and the plugin, editable,
# into the venv, then its tests; iree-kit: the whole conformance kit with compiler=iree
IREE_STAMP := $(VENV)/.iree-installed
$(IREE_STAMP): $(STAMP) plugins/nxpy-iree/pyproject.toml
	$(PY) -m pip install -q -e plugins/nxpy-iree
	touch $(IREE_STAMP)

iree: $(IREE_STAMP)
	$(LIMIT) $(PY) -m pytest -q -n 2 -p no:cacheprovider plugins/nxpy-iree/tests

iree-kit: $(IREE_STAMP)
	$(LIMIT) $(PY) -m pytest -q -n auto -p no:cacheprovider -rs --pyargs nxpy.testing --nxpy-compiler=iree

demo: $(STAMP)
	$(PY) examples/demo.py

train: $(STAMP)
	$(PY) examples/train.py

# optax's AdamW in an nxpy step (from_jax) and an nxpy loss in a jax.jit step (to_jax)
optax-example: $(STAMP)
	$(PY) examples/optax_adamw.py

# a character-level GPT on Tiny Shakespeare (examples/gpt.py; ARGS="--mesh 2x2": 4 devices)
GPT_STEPS ?= 200
gpt: $(STAMP)
	$(PY) -c "import matplotlib" 2>/dev/null || $(PY) -m pip install -q -e '.[plot]'
	$(PY) examples/gpt.py --steps $(GPT_STEPS) $(ARGS)

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf .venv .venv-*/ .pytest_cache
