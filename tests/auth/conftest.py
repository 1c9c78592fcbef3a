"""Fixtures for passkey login and enrollment, admin logins, throttling, races, a real browser.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
