# The two commands of README's quick start, and a contributor's (CONTRIBUTING.md).  Each
# sets itself up on a fresh machine.
#   make demo   the MobileNetV2 family under a 1-core, 1 GiB device (auto-detected backend)
#   make test   every test tier; in CI (CI=true) a tier that cannot run fails the run;
#               TIERS="static unit" runs those alone (tests/run_tiers.py's names)
#   make lint   ruff, mypy --strict, the import contracts and the docs site: no root needed
#   make clean  what setup, test, lint and demo made: the venv, the compiled helper, caches

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
EDGEPROF := $(VENV)/bin/edgeprof
export PIP_DISABLE_PIP_VERSION_CHECK := 1
comma := ,
empty :=
space := $(empty) $(empty)

.PHONY: setup demo test lint clean

# The venv lives in the checkout: the cgroup v2 VM tier reaches it through the host-root share.
$(VENV)/.installed: pyproject.toml setup.py native/cgstat.c native/cgstat.h native/build_cgstat.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# PyTorch first and exactly this version: our machines hold its CPU wheel, and any
	# other version (asked for by a range) would pull a CUDA build of several GB.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,docker,examples,plot,torch,ray]'
	touch $@

setup: $(VENV)/.installed

MODELS := .demo/models
# Only the models the demo runs: the generator's SqueezeNet (for examples/benchmark and ci.md)
# had been written too, 4.7 MiB that neither the demo nor the README mentioned.
NAMES := $(foreach w,0.25 0.5 0.75 1.0,mobilenet_v2_$(w))
FAMILY := $(foreach n,$(NAMES),$(MODELS)/$(n).onnx)

# The MobileNetV2 family under a 1-core, 1 GiB device, 3 runs each: comparison and ranking.
demo: setup
	$(EDGEPROF) doctor
	$(PY) examples/benchmark/make_models.py --out $(MODELS) --only $(NAMES)
	$(EDGEPROF) run --cpus 1 --memory 1g --repeat 3 --out .demo/results \
	    -m $(subst $(space),$(comma),$(strip $(FAMILY))) -- $(PY) examples/benchmark/infer.py

test: setup
	$(PY) tests/run_tiers.py $(TIERS)

lint: setup
	$(VENV)/bin/ruff check edgeprof tests examples benchmarks native docs
	$(VENV)/bin/mypy  # pyproject's [tool.mypy] files: the package, tests, benchmarks
	$(VENV)/bin/lint-imports  # pyproject's [tool.importlinter]: the layers, no cycles
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -d .test-results/site

# Every file these targets write that git does not track: the editable install compiles the
# native helper into the package (edgeprof/backends/_cgstat.abi3.so; cffi's C where a build
# leaves it, native/_cgstat*.c, as .gitignore has it), the tiers write bytecode and
# hypothesis's examples, lint-imports its cache.
clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache .demo .test-results \
	    .hypothesis .import_linter_cache edgeprof/backends/_cgstat*.so native/_cgstat*.c
	find edgeprof tests examples benchmarks native docs integrations -name __pycache__ \
	    -type d -prune -exec rm -rf {} +
