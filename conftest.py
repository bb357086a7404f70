"""Root conftest: enables the SREGym pytest harness for every test directory in the repo."""

pytest_plugins = ["sregym_core.testing"]
