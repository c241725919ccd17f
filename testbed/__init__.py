"""Real Redis and real n8n for the end-to-end tests (tests/e2e/conftest.py), `make demo` and bench/.

Selection: external services from N8NLOCK_TEST_* variables, else Docker (testcontainers),
else local processes (redis-server, n8n from the npm registry cached in ~/.cache/n8nlock).
N8NLOCK_TEST_TOPOLOGY=queue starts n8n in queue mode instead (local processes only): a main
process, two workers and a PostgreSQL (queue.py, postgres.py).
"""
