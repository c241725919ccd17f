"""Rewriting users' workflow graphs.

Triggers, wrapping a body in a lock or rate limit, and taking it off.
"""
