"""Start a real asyncbroker from tests: see asyncbroker.testing.broker."""
