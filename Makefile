# Two entry points that work on a fresh machine (README): `make demo` and `make test`.
# Everything installs into .venv from pyproject.toml; re-installed only when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench bench-drain install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/lagbot demo

lint: $(STAMP)
	$(BIN)/ruff check bot remediations policies tests bench
	$(BIN)/ruff format --check bot remediations policies tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python bench/check_cycle.py

bench-drain: $(STAMP)
	$(BIN)/python bench/drain.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
