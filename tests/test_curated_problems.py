"""Every curated problem resolves against the installed plugins, and the suites cover what they must."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sregym_core.plugins import new_plugin_host
from sregym_core.problems import resolve_problem

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def host():
    return new_plugin_host()


def test_curated_problems_resolve(host):
    problems = host.get_problems()
    if not problems:
        pytest.skip("no app with curated problems is installed")
    for problem in problems.values():
        resolved = resolve_problem(problem, host)
        assert resolved.faults


def test_suite_coverage(host):
    problems = [p for p in host.get_problems().values() if p.app == "hotel-reservation"]
    if not problems:
        pytest.skip("hotel-reservation is not installed")
    assert len(problems) >= 40
    lite = [p for p in problems if "lite" in p.tags]
    assert 15 <= len(lite) <= 25
    modes = {p.failure_mode for p in problems}
    assert {"correlated", "concurrent", "metastable"} <= modes
    layers = {p.layer for p in problems}
    assert {"k8s", "storage", "datastore", "config", "app", "network"} <= layers


def test_every_curated_problem_declares_its_symptom_and_checks_the_system(host):
    """Validation observes the declared symptom before any agent acts; the oracle asks whether the
    faulty workload is healthy, not only whether the injected value is gone."""
    from sregym_core.symptoms import KINDS

    problems = [p for p in host.get_problems().values() if p.app == "hotel-reservation"]
    if not problems:
        pytest.skip("hotel-reservation is not installed")
    for problem in problems:
        assert problem.symptom, f"{problem.id} declares no symptom"
        assert all(s.split(" ", 1)[0] in KINDS for s in problem.symptom), problem.id
        assert "workload_healthy" in str(problem.oracle), f"{problem.id}: oracle lacks workload_healthy"
    lite = [p for p in problems if "lite" in p.tags]
    assert lite and all(p.symptom != ("latent",) for p in lite), "every lite problem shows a symptom"


def test_compatibility_doc_is_current():
    """docs/compatibility.md comes from `sregym list-faults --format markdown` (regenerate with tox -e generate)."""
    sregym = Path(sys.executable).parent / "sregym"
    env = {**os.environ, "SREGYM_DISABLE_PLUGINS": "noop"}  # the test stand-in is not part of the catalog
    current = subprocess.run([str(sregym), "list-faults", "--format", "markdown"], capture_output=True, text=True,
                             timeout=120, check=True, env=env).stdout
    committed = (ROOT / "docs" / "compatibility.md").read_text()
    assert committed == current, "docs/compatibility.md is stale: run `sregym list-faults --format markdown > docs/compatibility.md`"
