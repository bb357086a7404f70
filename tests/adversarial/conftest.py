"""The adversarial suite: every attack of issue 14 an evaluated agent could try with what it is
handed, each test asserting the safe outcome. All tests here carry the ``adversarial`` marker
(``pytest -m adversarial``); those that need the embedded cluster are also ``slow`` and share the
``shared_cluster`` fixture of tests/conftest.py with the end-to-end modules.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SREGYM = str(Path(sys.executable).parent / "sregym")
KUBECTL = str(Path(sys.executable).parent / "kubectl")


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



@contextlib.contextmanager
def _attempt_identity(admin_kubeconfig: Path, namespaces: list[str], workdir: Path) -> Iterator[Path]:
    from sregym_core.conductor.agent_access import grant_agent_access, revoke_agent_access
    from sregym_core.conductor.kube import Kube

    kube = Kube(admin_kubeconfig, kubectl=KUBECTL)
    account = f"agent-{uuid.uuid4().hex[:12]}"
    agent = grant_agent_access(kube, namespaces, workdir / "agent.kubeconfig", account=account,
                               expiration_seconds=600)
    try:
        yield agent
    finally:
        revoke_agent_access(kube, namespaces, account)


@pytest.fixture(scope="session")
def attempt_identity():
    """``with attempt_identity(admin_kubeconfig, namespaces, workdir) as agent_kubeconfig:`` a fresh
    attempt identity, made as ``sregym run`` makes one (its ServiceAccount and the agent's Roles in
    ``namespaces``), revoked when the block ends."""
    return _attempt_identity
