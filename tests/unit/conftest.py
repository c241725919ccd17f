"""A real redis-server for the tests of the operator commands (started once per module)."""

from tests.redis_fixtures import redis_client, redis_url

__all__ = ["redis_client", "redis_url"]
