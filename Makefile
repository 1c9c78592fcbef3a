# Sundown: `make run` serves the app (`make run PORT=5050` on another port), `make test` runs the whole suite.
PYTHON ?= python3
PORT ?= 5000
VENV := .venv
BIN := $(VENV)/bin
FLASK := SUNDOWN_ENV=$${SUNDOWN_ENV:-development} SUNDOWN_ORIGIN=$${SUNDOWN_ORIGIN:-http://localhost:$(PORT)} \
	$(BIN)/flask --app wsgi

.PHONY: run test bench install clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

# The dev server prints, last before serving, a box with http://localhost:PORT and the first admin's link.
run: install
	$(FLASK) db-upgrade
	$(FLASK) dev-server --port $(PORT)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench $(if $(QUICK),--quick,) $(if $(STRICT),--strict,)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis sundown.egg-info
