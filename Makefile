# Two commands on a fresh clone:
#   make demo   - set up, then build a demo vault and use it as an agent would
#   make test   - set up, then run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test test-bench plugin bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	PATH="$(abspath $(BIN)):$$PATH" bash scripts/demo.sh demo-vault

# Bytecode first: with PYTHONDONTWRITEBYTECODE set (as on CI), every `vaultmem` process the
# tests start would compile each module again (an editable install writes no .pyc).
# One test process more than there are cores, at most 4 (each may hold the real model): many
# tests wait on processes they start (watchers, CLI commands, lock holders), so a third
# process on 2 cores keeps both busy (the suite took 86-90 s with 3 against 102-104 s with
# 2 and 98-106 s with 4, in one alternating run on this 2-core machine). Work stealing, not
# xdist's default up-front split: a worker that drew the long race tests no longer leaves the
# others idle at the end (nine runs: 83.7-101.6 s, median 91.2, against six with the default:
# 98.3-105.5 s, median 100.5, on 2026-12-04).
TEST_DIST = --dist worksteal
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(min(4, len(os.sched_getaffinity(0)) + 1))")

# Every test but the bench scripts' own (marked `bench`: each runs a bench end to end, ~35 s of a
# worker, and guards the tooling, not a promise to users); `make test-bench` runs those, and CI both.
test: $(VENV)/.installed plugin
	$(BIN)/python -m compileall -q vaultmem
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(TEST_DIST) -m "not bench"

test-bench: $(VENV)/.installed
	$(BIN)/python -m compileall -q vaultmem
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(TEST_DIST) -m bench

# The Obsidian plugin: install its pinned packages, build, test; fail when the shipped
# bundle (obsidian_plugin/main.js) is stale (tests/test_obsidian.py checks the cross-language vectors).
obsidian_plugin/node_modules/.installed: obsidian_plugin/package-lock.json
	cd obsidian_plugin && npm ci --no-audit --no-fund --loglevel=error
	touch $@

plugin: $(VENV)/.installed obsidian_plugin/node_modules/.installed
	cp obsidian_plugin/main.js obsidian_plugin/.main.js.shipped
	cd obsidian_plugin && npm run build && npm test
	@cmp -s obsidian_plugin/main.js obsidian_plugin/.main.js.shipped || { rm -f obsidian_plugin/.main.js.shipped; \
		echo "obsidian_plugin/main.js is stale: the source builds a different bundle; commit the rebuilt main.js"; exit 1; }
	rm -f obsidian_plugin/.main.js.shipped

clean:
	rm -rf $(VENV) demo-vault obsidian_plugin/node_modules
