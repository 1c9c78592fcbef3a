"""``flask --app wsgi health``: the checks of GET /healthz as an exit status (``--url`` in test_deploy_caddy.py)."""

from __future__ import annotations

import json


def test_health_exits_0_with_the_checks_when_healthy(runner):
    result = runner.invoke(args=["health"])
    assert (result.exit_code, json.loads(result.output)) == (0, {"database": True, "migrations": True, "ok": True})


def test_health_exits_1_on_an_unmigrated_database(app_config, make_app, tmp_path):
    app = make_app({**app_config, "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}"})
    result = app.test_cli_runner().invoke(args=["health"])
    assert (result.exit_code, json.loads(result.output)) == (1, {"database": True, "migrations": False, "ok": False})


def test_health_refuses_a_url_that_is_not_http(runner):
    result = runner.invoke(args=["health", "--url", "file:///etc/passwd"])
    assert result.exit_code == 2 and "http:// or https://" in result.output
