"""Generators of the package data n8nlock ships, run by hand from a checkout (`make` targets).

- gen_shipped_renders.py (`make shipped-renders`): n8n_lockkit/primitives/shipped_renders.json
- gen_node_catalogue.py (`make node-catalogue`): n8n_lockkit/data/node_types.json

Not part of the wheel; a package so that the tests can import what a generator computes.
"""
