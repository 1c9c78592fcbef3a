"""Fixtures for forms as data: fields, the editor, per-form retention.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
