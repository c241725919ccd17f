"""Workflow graphs as n8n stores them: pure operations, and n8n's node catalogue."""
