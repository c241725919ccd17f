"""Real Redis and real n8n for end-to-end tests (used by tests/e2e/conftest.py).

Selection: external services from N8NLOCK_TEST_* variables, else Docker (testcontainers),
else local processes (redis-server, n8n from the npm registry cached in ~/.cache/n8nlock).
"""
