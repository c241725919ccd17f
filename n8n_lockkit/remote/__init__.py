"""Talking to an n8n instance: the REST client, credentials and push."""
