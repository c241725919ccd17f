"""The workspace.

Its folders, env files (YAML kept as written), placeholders, atomic file plans, and what
`n8nlock init` writes.
"""
