"""A model check of the lock protocol: the engine's real nodes, run by a small n8n interpreter."""
