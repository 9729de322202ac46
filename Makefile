# Two entry points that work on a fresh machine (README): `make demo` and `make test`.
# Everything installs into .venv from pyproject.toml; re-installed only when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench bench-drain bench-cli bench-scale install clean kafka-fetch kafka-up kafka-down kafka-groups

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/lagbot demo

# Apache Kafka itself (version pinned in tools/kafka/pom.xml), fetched with Maven into .kafka/ once.
kafka-fetch: $(STAMP)
	$(BIN)/python -m bot.apache_kafka fetch

kafka-up: $(STAMP)
	$(BIN)/python -m bot.apache_kafka up

kafka-down: $(STAMP)
	$(BIN)/python -m bot.apache_kafka down

kafka-groups: $(STAMP)
	$(BIN)/python -m bot.apache_kafka groups $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check bot remediations policies tests bench
	$(BIN)/ruff format --check bot remediations policies tests bench
	$(BIN)/mypy

test: lint kafka-fetch
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python bench/check_cycle.py

bench-drain: $(STAMP)
	$(BIN)/python bench/drain.py

# On Apache Kafka (make kafka-fetch first): lagbot check vs ConsumerGroupCommand; the cycle at 10k and 100k.
bench-cli: $(STAMP)
	$(BIN)/python bench/cli_vs_consumer_groups.py --groups 200 --partitions 10 --runs 5

bench-scale: $(STAMP)
	$(BIN)/python bench/scale.py --sizes 10000,100000 --partitions 50 --cycles 3

clean:
	rm -rf $(VENV) .kafka .pytest_cache .mypy_cache .ruff_cache *.egg-info
