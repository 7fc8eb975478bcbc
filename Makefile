# One entry point for everything: `make test`, `make demo`, `make bench`.
# Every target does its own set-up (system packages, virtualenv, services, jars) and is safe
# to run again; the second run reuses .venv/ and .cache/.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# The Spark driver JVM runs on a Java 25 when the machine has one (spark_jobs.driver_jvm: faster
# batches, less GC), else on the default Java; set it empty to keep the default.
SIGNALLER_SPARK_JAVA_HOME ?= $(firstword $(wildcard /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/java-25-openjdk-amd64))
export SIGNALLER_SPARK_JAVA_HOME

.PHONY: help deps system-deps venv stack-up stack-down stack-status lint typecheck test compat compat-full test-unit demo bench chaos chaos-quick chaos-test clean

help:
	@echo "make test    lint, type-check and run every test tier (starts PostgreSQL, Kafka and the schema registry)"
	@echo "make compat-full   the Debezium compatibility suite with every type in every handling mode"
	@echo "make demo    run the pipeline end to end and print a DEMO OK verdict"
	@echo "make bench   run the benchmarks, write bench/results/latest.json"
	@echo "make chaos   the pipeline under load and faults for ~15 min on a private stack, write bench/results/chaos-latest.json"
	@echo "make stack-up / stack-down / stack-status   the local services"

system-deps:
	@PYTHON=$(PYTHON) bash compose/local/install-system-deps.sh

$(STAMP): pyproject.toml | system-deps
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip==25.3
	$(BIN)/pip install -q -e '.[spark,dev]'
	touch $(STAMP)

venv: $(STAMP)
deps: venv
	$(BIN)/python -m devtools stack up

stack-up: venv
	$(BIN)/python -m devtools stack up
stack-down: venv
	$(BIN)/python -m devtools stack down
stack-status: venv
	$(BIN)/python -m devtools stack status

lint: venv
	$(BIN)/ruff check signaller spark_jobs tests schemas devtools $(wildcard bench)
typecheck: venv
	$(BIN)/mypy

test-unit: venv
	$(BIN)/pytest tests/unit -q $(PYTEST_ARGS)

# The pytest session starts the services it needs and stops those it started.
test: lint typecheck
	$(BIN)/pytest tests -q $(PYTEST_ARGS)

# The compatibility suite alone (it also runs in `make test`): Debezium's connector beside the sidecar.
compat: venv
	$(BIN)/pytest tests/compat -q $(PYTEST_ARGS)

# The compatibility suite with the all-types table (tests/compat/all_types.py, built from pg_type) in
# the default modes and once per other value of each decimal/time/binary/interval/hstore handling mode
# and include.unknown.datatypes, and in Avro, about 25 s a run; and the MariaDB script once per other value
# of each decimal/time/bigint-unsigned/binary mode, about 75 s a run (`make test` runs the default modes only).
compat-full: venv
	COMPAT_FULL=1 $(BIN)/pytest tests/compat -q $(PYTEST_ARGS)

demo: venv
	$(BIN)/python -m devtools demo

bench: venv
	$(BIN)/python -m bench.run

# The chaos run (issue 17) on a private PostgreSQL and Kafka of its own (.cache/chaos-stack, own ports, moved
# with SIGNALLER_CHAOS_*_PORT): it restarts and kills them, so it never touches the shared stack. `make
# chaos-quick` runs the two-minute version, `make chaos-test` the same as a pytest test (tests/chaos, which
# `make test` runs too). Exit status 1 if the verdict fails.
chaos: venv
	$(BIN)/python -m bench.chaos $(CHAOS_ARGS)
chaos-quick: venv
	$(BIN)/python -m bench.chaos --quick $(CHAOS_ARGS)
chaos-test: venv
	$(BIN)/pytest tests/chaos -q $(PYTEST_ARGS)

clean: venv
	-$(BIN)/python -m devtools stack down
	rm -rf .cache
