"""The workspace.

Its folders, env files (YAML kept as written), placeholders and atomic file plans.
"""
