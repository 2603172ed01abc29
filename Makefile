# The README's two commands: `make demo` (set-up + a small CPU training run) and `make test`.
# Both create .venv when no virtual environment is active, install a CPU torch when none is
# installed (scripts/install_torch.sh never replaces a torch you already have), then rewardzoo.
PYTHON ?= python3
VENV ?= .venv
ENV_DIR := $(if $(VIRTUAL_ENV),$(VIRTUAL_ENV),$(VENV))
PY := $(ENV_DIR)/bin/python
STAMP := $(ENV_DIR)/.rewardzoo-installed
PYTEST_ARGS ?= -n 2

.PHONY: install demo test test-slow bench clean

$(STAMP): pyproject.toml scripts/install_torch.sh
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	scripts/install_torch.sh $(PY)
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $@

install: $(STAMP)

demo: install  ## SFT warm start + 200 RLVR steps on 2-digit x 1-digit multiplication (under 2 min on 2 CPU cores)
	$(ENV_DIR)/bin/rewardzoo train algorithms/rlvr_multiplication.yaml

test: install  ## the default suite (fast tiers; slow learning runs excluded)
	$(PY) -m pytest $(PYTEST_ARGS)

test-slow: install  ## slow end-to-end learning runs and the two-process launch
	$(PY) -m pytest -m slow

bench: install  ## performance benchmarks; results land in benchmarks/results/
	$(PY) benchmarks/logprob_memory.py --hidden 256 --tokens 4096 | tee benchmarks/results/logprob_memory.txt

clean:
	rm -rf runs .pytest_cache
