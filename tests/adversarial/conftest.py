"""The adversarial suite: every attack of issue 14 an evaluated agent could try with what it is
handed, each test asserting the safe outcome. All tests here carry the ``adversarial`` marker
(``pytest -m adversarial``); those that need the embedded cluster are also ``slow`` and share the
``shared_cluster`` fixture of tests/conftest.py with the end-to-end modules.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SREGYM = str(Path(sys.executable).parent / "sregym")


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.adversarial)


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module")
def deployed(shared_cluster):
    """Hotel Reservation on the shared cluster, deployed as the e2e modules deploy it."""
    if not (_installed("sregym_cluster_embedded") and _installed("sregym_app_hotel_reservation")
            and _installed("sregym_fault_k8s")):
        pytest.skip("needs the embedded cluster, hotel-reservation and the k8s faults")
    done = subprocess.run([SREGYM, "deploy", "hotel-reservation", "--cluster", shared_cluster.name, "--workdir",
                           str(shared_cluster.workdir)], env=shared_cluster.environ, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return shared_cluster
