"""Generators of the package data n8nlock ships and of the docs' CLI reference, run by hand
from a checkout (`make` targets).

- gen_shipped_renders.py (`make shipped-renders`): n8n_lockkit/primitives/shipped_renders.json
- gen_node_catalogue.py (`make node-catalogue`): n8n_lockkit/data/node_types.json
- gen_cli_reference.py (`make docs-reference`): docs/reference/cli.md

Not part of the wheel; a package so that the tests can import what a generator computes.
"""
