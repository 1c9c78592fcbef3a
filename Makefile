# Sundown: `make run` serves the app, `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
FLASK := SUNDOWN_ENV=$${SUNDOWN_ENV:-development} $(BIN)/flask --app wsgi

.PHONY: run test bench install clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

run: install
	$(FLASK) db-upgrade
	$(FLASK) admin first-link
	$(FLASK) run --host 127.0.0.1 --port 5000

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench $(if $(QUICK),--quick,)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis sundown.egg-info
