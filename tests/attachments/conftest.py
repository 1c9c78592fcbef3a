"""Fixtures for files sent with inquiries.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
