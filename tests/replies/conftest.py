"""Fixtures for replies and acknowledgements.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
