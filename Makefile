# Two commands on a fresh clone:
#   make demo   - set up, then build a demo vault and use it as an agent would
#   make test   - set up, then run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	PATH="$(abspath $(BIN)):$$PATH" bash scripts/demo.sh demo-vault

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) demo-vault
