# Two commands do all set-up: `make app` and `make test`. Both create .venv on first use.
# The Voila settings (template, warm kernel, culling, no sources or tracebacks) are in voila.json.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8866

.PHONY: app test test-fast lint lab bench bench-load notebooks clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e ".[test]"
	touch $(STAMP)

app: $(STAMP)
	@echo "Accelerator Workbook: open http://127.0.0.1:$(PORT)/ in your browser (Ctrl-C stops it)"
	JUPYTER_PATH=$(CURDIR)/share/jupyter $(BIN)/voila notebooks/app.ipynb --no-browser --port=$(PORT) --Voila.ip=127.0.0.1

test: $(STAMP) lint
	$(BIN)/python -m pytest

# The model, data, training, serving, charts, app and CLI layers: no browser, no Voila server, no notebooks.
test-fast: $(STAMP)
	$(BIN)/python -m pytest tests -m "not browser and not e2e and not notebook"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/browser.py

bench-load: $(STAMP)
	$(BIN)/python benchmarks/load.py $(LOAD_ARGS)

notebooks: $(STAMP)
	$(BIN)/python scripts/refresh_notebooks.py

clean:
	rm -rf $(VENV)
