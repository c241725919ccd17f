"""Checking workflow files: the rules, their findings and severities, and the lint settings."""
