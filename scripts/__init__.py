"""Scripts that maintain the repository's generated files (run as `python -m scripts.<name>`)."""
