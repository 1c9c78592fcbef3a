# Sundown: `make run` serves the app (`make run PORT=5050` on another port), `make test` runs the whole suite.
PYTHON ?= python3
PORT ?= 5000
VENV := .venv
BIN := $(VENV)/bin
FLASK := SUNDOWN_ENV=$${SUNDOWN_ENV:-development} SUNDOWN_ORIGIN=$${SUNDOWN_ORIGIN:-http://localhost:$(PORT)} \
	$(BIN)/flask --app wsgi

# The gettext catalogs: app/translations/<locale>/LC_MESSAGES/messages.po, compiled to .mo (never committed).
TRANSLATIONS := app/translations
CATALOGS := $(wildcard $(TRANSLATIONS)/*/LC_MESSAGES/messages.po)
COMPILED := $(CATALOGS:.po=.mo)

.PHONY: run test bench install clean messages translations lock env-example audit

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

# Dependencies come only from the lock file, each checked against its hash; then the project itself.
# requirements.lock is what production installs; requirements-test.lock adds the test tools.
$(VENV)/.installed: pyproject.toml requirements-test.lock | $(BIN)/activate
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements-test.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

# After changing dependencies in pyproject.toml: pin them again, with hashes.
lock: | $(BIN)/activate
	$(BIN)/pip install --quiet pip-tools
	$(BIN)/pip-compile --quiet --generate-hashes --strip-extras --no-emit-index-url \
		--no-emit-find-links -o requirements.lock pyproject.toml
	$(BIN)/pip-compile --quiet --generate-hashes --strip-extras --extra test --no-emit-index-url \
		--no-emit-find-links -o requirements-test.lock pyproject.toml

# Known advisories in the locked packages; --strict fails on a package it could not look up as well.
audit: $(VENV)/.installed
	$(BIN)/pip-audit --strict --require-hashes --disable-pip -r requirements.lock -r requirements-test.lock

# .env.example and README.md's settings table, from the records in app/settings.py.
env-example: $(VENV)/.installed
	$(BIN)/python -m devtools.envexample

install: $(VENV)/.installed translations

translations: $(COMPILED)

%.mo: %.po $(VENV)/.installed
	$(BIN)/pybabel compile --statistics -i $< -o $@

# Extract every gettext message from app/ and templates/, then add new ones to each catalog (to translate).
messages: $(VENV)/.installed
	$(BIN)/pybabel extract -F babel.cfg -k lazy_gettext -k _l -k lazy_pgettext:1c,2 -k N_ \
		--add-location=file --sort-output --no-wrap --project=Sundown -o $(TRANSLATIONS)/messages.pot app templates
	$(BIN)/pybabel update --no-wrap --ignore-obsolete -i $(TRANSLATIONS)/messages.pot -d $(TRANSLATIONS)
	$(MAKE) translations

# The dev server prints, last before serving, a box with http://localhost:PORT and the first admin's link.
run: install
	$(FLASK) db-upgrade
	$(FLASK) dev-server --port $(PORT)

# One test worker per core; a module's tests stay on one worker, so its servers and fixtures are made once.
test: install
	$(BIN)/python -m pytest -n auto --dist loadfile $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench $(if $(QUICK),--quick,) $(if $(STRICT),--strict,) $(if $(ROWS),--rows $(ROWS),) $(if $(ONLY),--only $(ONLY),)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis sundown.egg-info build dist
