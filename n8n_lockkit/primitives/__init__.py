"""The primitives n8nlock ships.

Their catalogue, the Redis key layout, rendering and installing them.
"""
