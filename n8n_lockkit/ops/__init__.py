"""Operating locks in Redis directly: list them, force-release one, reap dead holders, stats."""
