# Two entry points that work on a fresh machine (README): `make demo` and `make test`.
# Everything installs into .venv from pyproject.toml; re-installed only when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo demo-web test test-one bytecode lint corpus bench bench-drain bench-cli bench-scale install clean kafka-fetch k8s-fetch k8s-build-start kafka-up kafka-down kafka-groups browser screenshot test-unit

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/lagbot demo

# The same demo, its Slack channel served as a page on 127.0.0.1 where you click Approve yourself.
demo-web: $(STAMP)
	$(BIN)/lagbot demo --web

# Debian's Chromium, and an emoji font for its pages, for the web demo's test (no browser download);
# installed with apt-get only when missing, which needs root.
BROWSER_PACKAGES := chromium fonts-noto-color-emoji
browser:
	@if [ -x /usr/bin/chromium ] && [ -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y $(BROWSER_PACKAGES) \
		|| { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(BROWSER_PACKAGES); }; \
	else echo "make browser: Chromium is missing; as root run: apt-get install -y $(BROWSER_PACKAGES)" >&2; exit 1; fi

# The README's screenshot: the web demo's test, clicking Approve in headless Chromium, saves it.
screenshot: $(STAMP) kafka-fetch browser
	LAGBOT_SCREENSHOT=docs/demo-web.png $(BIN)/pytest -q tests/devkit/test_demo_web.py

# Apache Kafka itself (version pinned in tools/kafka/pom.xml), fetched with Maven into .kafka/ once.
kafka-fetch: $(STAMP)
	$(BIN)/python -m lagbot.devkit.apache_kafka fetch

# The Kubernetes control plane the tests run (kube-apiserver, kube-controller-manager, kubectl v1.37.2, etcd
# v3.7.3), built from the Go module proxy with the installed Go into .k8s/bin; pinned in tools/k8s/*/go.mod.
k8s-fetch:
	bash tools/k8s/fetch.sh

# The same build started in the background (nothing when .k8s/bin has the pin): `make test` and `make test-one`
# run pytest beside it; its output is .k8s/build.log, .k8s/build.status says how it ended, and a test that needs
# the control plane waits for it (tests/support/k8s_build.py). Those tests run last on each worker.
k8s-build-start:
	@bash tools/k8s/fetch.sh --background

kafka-up: $(STAMP)
	$(BIN)/python -m lagbot.devkit.apache_kafka up

kafka-down: $(STAMP)
	$(BIN)/python -m lagbot.devkit.apache_kafka down

kafka-groups: $(STAMP)
	$(BIN)/python -m lagbot.devkit.apache_kafka groups $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check bot remediations policies tests bench tools
	$(BIN)/ruff format --check bot remediations policies tests bench tools
	$(BIN)/mypy
	$(BIN)/lint-imports  # the layer contracts in pyproject.toml [tool.importlinter]

# The whole suite, on WORKERS pytest-xdist workers (each starts its own broker, redis-server and control plane),
# a test file to one worker so a module's fixtures are built once; `make test WORKERS=0` runs it in one process.
# The web demo's browser test needs Chromium, which only root can install (make browser): without it, and not
# root, the rest of the suite runs and the browser test is named as left out (exit status of the rest).
# The control plane builds meanwhile (k8s-build-start, first so it overlaps lint too); the files that need it come
# last in the collection (tests/conftest.py), and --no-loadscope-reorder keeps that order (xdist would otherwise
# hand out the files with the most tests first). The 25 slowest steps are listed at the end: where the time goes.
WORKERS ?= 2
PARALLEL := -n $(WORKERS) --dist loadfile --no-loadscope-reorder --durations=25
test: k8s-build-start lint kafka-fetch bytecode
	@if $(MAKE) -s browser; then $(BIN)/pytest -q $(PARALLEL); \
	else echo "make test: Chromium is missing, so tests/devkit/test_demo_web.py is left out; as root: make browser" >&2; \
	$(BIN)/pytest -q $(PARALLEL) --ignore=tests/devkit/test_demo_web.py; fi

# Bytecode for the project's own modules, written once before the suite: it starts hundreds of Python processes
# (lagbot commands, offset readers, consumer fleets, Spark's Python workers), and where the environment sets
# PYTHONDONTWRITEBYTECODE each of them would compile the modules it imports again (measured: 0.5 CPU-s each).
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q bot remediations policies tests

# One test module or node id: make test-one T=tests/test_layers.py (T='tests/x.py::test_y' for one test).
test-one: $(STAMP)
	@test -n "$(T)" || { echo "make test-one: name the test, e.g. make test-one T=tests/test_layers.py" >&2; exit 4; }
	@bash tools/k8s/fetch.sh --background
	$(BIN)/pytest -q "$(T)"

# The pure suite alone (no broker, no Redis, no Spark, no connection at all): about 40 s.
test-unit: $(STAMP)
	$(BIN)/pytest -q -m "not integration"

corpus: $(STAMP) kafka-fetch  # the scenario corpus on Apache Kafka: one table of status, primary cause, remediation
	$(BIN)/python -m tests.support.corpus

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
	rm -rf $(VENV) .kafka .k8s .pytest_cache .mypy_cache .ruff_cache *.egg-info
