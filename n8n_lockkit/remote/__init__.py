"""Talking to an n8n instance: the REST client, credentials, push, pull and diff."""
