# Two commands for a newcomer: `make demo` and `make test`. Each builds the environment from nothing
# (only python3.11 is needed) and then runs.
PYTHON ?= python3
UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
export UV_PYTHON_DOWNLOADS := never
export UV_COMPILE_BYTECODE := 1

.PHONY: demo test lint bench bench-quick generative emulator dagster dictionary clean

# The project's bytecode, once: under PYTHONDONTWRITEBYTECODE every process would compile the same sources
# again: every test worker and every process a test starts (the CLI, dagster), and every run a benchmark
# times (0.3 s of each start when the project's bytecode is stale). Test modules are pytest's to compile.
COMPILE := $(VENV)/bin/python -m compileall -q -x '/\.|/(test_[^/]*|conftest)\.py$$' .

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# The venv is rebuilt whenever the lock file changes.
$(VENV)/.synced: uv.lock pyproject.toml | $(UV)
	$(UV) sync --locked --compile-bytecode --python $(PYTHON)
	touch $@

# The benchmark extra (dlt, psutil, pyinstrument) on top of the same lock. It touches both stamps: the
# venv then serves `make test` as well, and a later plain sync (a new lock) outdates this stamp too.
$(VENV)/.synced-bench: uv.lock pyproject.toml | $(UV)
	$(UV) sync --locked --compile-bytecode --extra bench --python $(PYTHON)
	touch $(VENV)/.synced $@

demo: $(VENV)/.synced
	$(VENV)/bin/authority-sync demo

# Tests run on every core, dealt test by test to the workers (--dist loadgroup: a test file marked with an
# `xdist_group` stays on one worker, for a costly module fixture), in the order tests/conftest.py sets
# (longest first; --no-loadscope-reorder keeps xdist from putting the groups with the most tests first).
# mypy runs beside the tests, not before them: on a clean clone (no cache) it takes about a minute of one
# core, and the test workers leave about a fifth of the cores idle while they wait. The target fails if
# either fails; mypy's report comes after the tests'.
test: $(VENV)/.synced
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(COMPILE)
	@# Two workers per core: many tests wait (on latency, Retry-After, a subprocess) rather than compute,
	@# so twice the cores overlaps those waits. The ten slowest tests are listed: the suite's time is a
	@# target (issue 30), and a clean clone's run is where it is measured.
	@$(VENV)/bin/mypy > $(VENV)/mypy.out 2>&1 & types=$$!; \
	$(VENV)/bin/pytest -n $$(( 2 * $$(nproc) )) --dist loadgroup --no-loadscope-reorder --durations=10; tests=$$?; \
	wait $$types; typed=$$?; echo "mypy:"; cat $(VENV)/mypy.out; \
	test $$tests -eq 0 && test $$typed -eq 0

lint: $(VENV)/.synced
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The scenarios of benchmarks/run.py (latency, rate limit, incremental, memory, reverse sync); not part
# of `make test`. Tables print here and land as JSON under data/bench/.
bench: $(VENV)/.synced-bench
	$(COMPILE)
	$(VENV)/bin/python -m benchmarks.run

# Scenarios 1 and 3 on a quarter-size tenant (5,000 decisions), ours beside dlt in the same run, in about two
# minutes: run it before merging a change to the hot path (compare with the README's figure).
bench-quick: $(VENV)/.synced-bench
	$(COMPILE)
	$(VENV)/bin/python -m benchmarks.run --quick

# The protocol fuzzer of the sync (tests/test_sync_generative.py) at 300 examples instead of make test's 4,
# the sequences of changes and runs that hold reusing unchanged records to deriving them
# (tests/test_unchanged.py) at 300 instead of 2, and the generative test of the HR write path
# (tests/test_hr_generative.py: each example plans and applies) at 50 instead of 3. `make test` draws the
# same examples every run (reproducible); this draws new ones.
generative: $(VENV)/.synced
	HYPOTHESIS_PROFILE=explore ADM_GENERATIVE_EXAMPLES=300 ADM_HR_GENERATIVE_EXAMPLES=50 $(VENV)/bin/pytest -q tests/test_sync_generative.py \
		tests/test_unchanged.py tests/test_hr_generative.py

emulator: $(VENV)/.synced
	$(VENV)/bin/authority-sync emulator

# `dagster dev` tells every start to use `dg dev` instead; dg needs another package (dagster-dg-cli) and a
# dg project definition, while `dagster dev -w workspace.yaml` is supported as it is: that one warning is not shown.
NOT_DG := ignore:Function `dev_command` is superseded

# The Dagster UI with every asset, check, job and schedule (start `make emulator` beside it, or set ADM_*).
dagster: $(VENV)/.synced
	mkdir -p data/dagster_home && cp pipelines/dagster.yaml data/dagster_home/dagster.yaml
	@# With no service configured, the UI drives `make emulator` with the demo files under data/demo/.
	@if [ -z "$$ADM_BASE_URL$$ADM_ENVIRONMENT" ]; then \
		echo "No ADM_BASE_URL: syncing the local emulator (make emulator) into data/demo/warehouse.duckdb"; \
		eval "$$($(VENV)/bin/python -m pipelines.demo)"; \
	fi; DAGSTER_HOME=$(CURDIR)/data/dagster_home PYTHONWARNINGS='$(NOT_DG)' \
		$(VENV)/bin/dagster dev -w workspace.yaml

# The generated docs: docs/data-dictionary.md and warehouse/described_schema.json, rendered again from
# warehouse/dictionary.toml and the migrated schema; warehouse/baseline.sql, the schema as one script, and
# warehouse/empty-<digest>.duckdb, the empty warehouse it builds, which a new warehouse is a copy of; the
# README's table of settings, from pipelines/settings.py.
dictionary: $(VENV)/.synced
	$(VENV)/bin/python -m warehouse.dictionary_page --write
	$(VENV)/bin/python -m warehouse.baseline --write
	$(VENV)/bin/python -m pipelines.settings_doc --write

clean:
	rm -rf $(VENV) $(TOOLS) data
