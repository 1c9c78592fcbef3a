"""Fixtures for the core: settings, the database, the background runner, i18n, logs, metrics, operator commands.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
