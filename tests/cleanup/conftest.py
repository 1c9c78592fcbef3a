"""Fixtures for the cleanup: the claim, batches, runs and their ledger, the after-response hook, real servers.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
