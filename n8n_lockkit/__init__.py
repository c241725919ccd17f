"""n8nlock: Redis locks and rate limits for n8n, built from n8n's own nodes.

The Python API is internal; the command line is the interface.
"""

__version__ = "0.1.0"
