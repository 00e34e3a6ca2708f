"""The HTTP layer's parts: settings-backed dependencies, schemas, the turn streamer, metrics."""
