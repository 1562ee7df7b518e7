# `make test` and `make demo` are the whole set-up on a fresh machine: they create
# (or reuse) .venv, install nxpy with its pinned jax/jaxlib, and run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test roundtrip demo train bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadgroup

# the whole suite again, every EXLA program also emitted -> parsed -> loaded -> rerun
roundtrip: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadgroup -p nxpy.stablehlo.roundtrip

demo: $(STAMP)
	$(PY) examples/demo.py

train: $(STAMP)
	$(PY) examples/train.py

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache
