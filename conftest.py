"""Root conftest: enables the SREGym pytest harness for every test directory in the repo, and keeps the
exhaustive live matrices (marker ``matrix``) out of the default run: CI runs the unit, contract and one
live end-to-end test per package, plus a rotating sample of validations; ``--matrix`` (or
``SREGYM_MATRIX=1``) runs everything."""

import os

import pytest

pytest_plugins = ["sregym_core.testing"]


def pytest_configure(config: pytest.Config) -> None:
    # Under pytest-xdist (./test.sh runs two workers), every worker gets its own SREGYM_HOME: its
    # session cluster and the clusters its tests start live apart from the other worker's, whose
    # names they share. Addresses stay distinct machine-wide (the embedded cluster's range registry).
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        base = os.environ.get("SREGYM_HOME") or os.path.join(os.path.expanduser("~"), ".sregym")
        os.environ["SREGYM_HOME"] = os.path.join(base, f"xdist-{worker}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--matrix", action="store_true", default=False,
                     help="also run the exhaustive live matrices (tests marked 'matrix'); see docs/validation.md")


def _start_order(item: pytest.Item) -> int:
    if item.get_closest_marker("heavy") is not None:
        return 0
    return 1 if item.get_closest_marker("slow") is not None else 2


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Workers take whole files in collection order (--dist loadfile): files with a test that takes
        # minutes go first, then the other live files, the quick ones last to fill the gaps, so no
        # worker starts a ten-minute file while the other one idles. Every worker sorts the same way;
        # tests keep their order within a file.
        rank: dict[object, int] = {}
        for item in items:
            rank[item.path] = min(rank.get(item.path, 2), _start_order(item))
        items.sort(key=lambda item: rank[item.path])
    if config.getoption("--matrix") or os.environ.get("SREGYM_MATRIX") == "1":
        return
    skip = pytest.mark.skip(reason="exhaustive live matrix: run with --matrix or SREGYM_MATRIX=1 (docs/validation.md)")
    for item in items:
        if item.get_closest_marker("matrix") is not None:
            item.add_marker(skip)
