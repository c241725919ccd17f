"""Wrapping a body in a guard, rate limits and a lock, and taking it off again."""
