"""pytest plugin: the `asyncbroker_bootstrap` fixture (filled in by the service issue)."""
