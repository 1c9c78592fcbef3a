"""Fixtures for people: access, export and erasure.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
