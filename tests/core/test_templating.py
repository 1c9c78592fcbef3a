"""app/templating.py registers every template filter, global and context function of the app, and nothing else does.

No database: the app is built on an in-memory SQLite URL and its templates only compiled.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app import create_app, templating

ROOT = Path(__file__).resolve().parents[2]
REGISTERING = re.compile(r"template_filter|template_global|template_test|context_processor|jinja_env")
SETTINGS = {"ENV": "development", "SECRET_KEY": "k" * 32, "DATABASE_URL": "sqlite://"}


@pytest.fixture(scope="module")
def bare_app():
    return create_app(SETTINGS)


def of_the_app(value) -> bool:
    """Whether ``value`` is a function or class of Sundown's own (not Jinja's, Flask's or an extension's)."""
    return getattr(value, "__module__", "").startswith("app.")


def test_no_module_but_templating_registers_for_templates():
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in (ROOT / "app").rglob("*.py")
        if path.name != "templating.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if REGISTERING.search(line)
    ]
    assert found == []


def test_the_app_has_exactly_the_filters_and_globals_of_templating(bare_app):
    filters = {name for name, value in bare_app.jinja_env.filters.items() if of_the_app(value)}
    assert filters == set(templating.FILTERS)
    assert {name for name, value in bare_app.jinja_env.globals.items() if of_the_app(value)} <= set(templating.GLOBALS)
    assert all(bare_app.jinja_env.globals[name] is value for name, value in templating.GLOBALS.items())


def test_the_only_context_functions_of_the_app_are_templatings(bare_app):
    ours = [
        function
        for functions in bare_app.template_context_processors.values()
        for function in functions
        if of_the_app(function)
    ]
    assert ours == list(templating.CONTEXT)


def test_every_template_compiles_with_these_names(bare_app):
    # An unknown filter fails here, at compile time; an unknown global would render as empty.
    names = bare_app.jinja_env.list_templates(extensions=["html", "txt", "js"])
    assert len(names) > 20
    for name in names:
        bare_app.jinja_env.get_template(name)
