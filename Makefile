# Two commands (see README):  make lab   — set up and open JupyterLab at the first notebook
#                             make test  — set up and run every test (unit tests, ruff, nbval on every
#                                          notebook, browser tests)
# Setup is a virtual environment in .venv, rebuilt only when requirements.txt or pyproject.toml change.

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
FIRST_NOTEBOOK = notebooks/00_what_is_a_barrier.ipynb
PYTEST_ARGS ?=
# Test workers (pytest-xdist): a notebook, a test file or a test class runs whole on one worker. Most of the
# suite's time is ranks waiting out deadlines, so more workers than cores still help; 0 runs in this process.
PYTEST_WORKERS ?= 3
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist loadscope

.PHONY: lab test check setup browser-setup notebooks benchmark benchmark-notebooks clean

setup: $(VENV)/.installed

# torch first, by scripts/install_torch.py: the CPU build unless the machine has an NVIDIA GPU
# (BARRIERLAB_TORCH=cuda|cpu|auto decides otherwise; after a change: make clean setup).
$(VENV)/.installed: requirements.txt pyproject.toml scripts/install_torch.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python scripts/install_torch.py --python $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python -m barrierlab_kernel install
	touch $@

# --allow-root only when run as root (containers, CI); JupyterLab refuses root otherwise.
ALLOW_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root,)

# The URL JupyterLab prints and opens is notebook 00's (default_url), not the Launcher's. This lab's JupyterLab
# (the one in .venv) does not ask about or fetch Jupyter news: labsettings/barrierlab.json is a settings override.
LAB_OVERRIDES = $(VENV)/share/jupyter/lab/settings/overrides.d/barrierlab.json
LAB_ARGS = --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/$(FIRST_NOTEBOOK)

lab: setup $(LAB_OVERRIDES)
	$(BIN)/jupyter lab $(LAB_ARGS) $(ALLOW_ROOT)

$(LAB_OVERRIDES): labsettings/barrierlab.json
	mkdir -p $(dir $@) && cp $< $@

test: setup browser-setup
	$(BIN)/ruff format --check --quiet . && $(BIN)/ruff check --quiet .
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) --nbval --nbval-current-env --nbval-cell-timeout=120 \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -rxX tests $(wildcard notebooks/*.ipynb) $(PYTEST_ARGS)

# While working: ruff and the tests that need neither a browser, torchrun nor many runs (no nbval).
check: setup
	$(BIN)/ruff format --check --quiet . && $(BIN)/ruff check --quiet .
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) -q -m "not browser and not torchrun and not slow" tests $(PYTEST_ARGS)

# Chromium (apt-get, only as root and only if missing) and Playwright for tests/browser/; idempotent.
browser-setup: setup
	scripts/setup_browser.sh $(VENV)

notebooks: setup
	$(BIN)/python scripts/run_notebooks.py

benchmark: setup
	$(BIN)/python benchmarks/launch.py
	$(BIN)/python benchmarks/record.py

benchmark-notebooks: setup
	$(BIN)/python benchmarks/notebooks.py --cpus 1

clean:
	rm -rf $(VENV)
