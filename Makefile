# The two commands of README's quick start.  Each sets itself up on a fresh machine.
#   make demo   profile the example workload under device limits (auto-detected backend)
#   make test   every test tier; in CI (CI=true) a tier that cannot run fails the run

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
EDGEPROF := $(VENV)/bin/edgeprof
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup demo test lint clean

# The venv lives in the checkout: the cgroup v2 VM tier reaches it through the host-root share.
$(VENV)/.installed: pyproject.toml setup.py native/cgstat.c native/cgstat.h native/build_cgstat.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(EDGEPROF) doctor
	@echo
	$(EDGEPROF) run --name "1 cpu, 256m" --cpus 1 --memory 256m -- $(PY) examples/quickstart/infer.py
	@echo
	$(EDGEPROF) run --name "0.5 cpu, 256m" --cpus 0.5 --memory 256m -- $(PY) examples/quickstart/infer.py
	@echo
	$(EDGEPROF) run --name "1 cpu, 64m" --cpus 1 --memory 64m -- $(PY) examples/quickstart/infer.py --batch 64 || true

test: setup
	$(PY) tests/run_tiers.py

lint: setup
	$(VENV)/bin/ruff check edgeprof tests
	$(VENV)/bin/mypy edgeprof

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
