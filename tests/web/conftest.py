"""Fixtures for the public pages and APIs, intake, embedding, health.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
