"""Workspace plans of the wrapping commands and of upgrade: workflow and env files together."""
