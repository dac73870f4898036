# Two commands do all set-up: `make app` and `make test`. Both create .venv on first use.
# The Voila settings (template, warm kernel, culling, no sources or tracebacks) are in voila.json.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8866
# Every dependency of every extra, pinned with hashes for Linux, macOS and Windows, Python >= 3.11.5
# (one pinned dependency needs 3.11.5). `make lock` regenerates it, keeping the current pins where they still fit.
LOCK   := requirements.lock
# The editable install copies the Voila template into .venv/share/jupyter, where Voila looks: reinstall on a change.
TEMPLATE := $(wildcard share/jupyter/voila/templates/workbook/*)

.PHONY: app test test-fast lint lab lock bench bench-load notebooks clean

$(STAMP): pyproject.toml $(LOCK) $(TEMPLATE)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

app: $(STAMP)
	$(BIN)/workbook app --port=$(PORT)

test: $(STAMP) lint
	$(BIN)/python -m pytest

# The model, data, training, serving, charts, app and CLI layers: no browser, no Voila server, no notebooks, none of
# the few multi-second end-to-end checks marked slow (PNG export, the CLI's report, the 25-scenario fuzz).
# One pytest worker per core (pytest-xdist; a test file stays on one worker, so its module fixtures are built once),
# polars single-threaded in each so the workers do not fight over the cores. Without the notebook plugin (nbval) and
# the e2e folder, nothing imports nbformat, whose jsonschema import costs each worker ~2 s building an IRI grammar.
# Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE, as on CI machines): without
# it every worker and every CLI subprocess compiles the package and rewrites the tests' asserts again (~3 s each).
test-fast: $(STAMP)
	PYTHONDONTWRITEBYTECODE= POLARS_MAX_THREADS=1 $(BIN)/python -m pytest tests -n auto --dist loadfile -p no:nbval -o addopts=-q \
		--ignore=tests/e2e -m "not browser and not e2e and not notebook and not slow"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Lab rooted at the repository (data/ is one click away) with the engineer notebook open.
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR) notebooks/explore.ipynb

lock: $(STAMP)
	$(BIN)/pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml --universal --generate-hashes --all-extras --python-version 3.11.5 -o $(LOCK)

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/browser.py

bench-load: $(STAMP)
	$(BIN)/python benchmarks/load.py $(LOAD_ARGS)

notebooks: $(STAMP)
	$(BIN)/python scripts/refresh_notebooks.py

clean:
	rm -rf $(VENV)
