"""Read a recorded attempt the way the landing suite may: did the fix take, whatever the machine's load?

A reference agent's mitigation verdict mixes two kinds of check. State checks (``baseline_preserved``,
``fault_invariant``, ``workload_healthy``) look at the cluster and do not depend on how busy the
machine is. The functional SLO grades a success rate, latency and request count measured over a window
on the machine itself; on a shared 2-core CI runner that measures the machine as much as the fix.
The landing suite asserts the first kind and lets the second be graded by validation runs
(``sregym validate``, ``tools/validate-sample.sh``; docs/ci.md). Wrong *content* is never excused: a
stub answering 200 with the wrong body fails here too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..oracles.mitigation import OracleVerdict

#: the state checks a fix must pass for the landing suite to call it a fix
STATE_CHECKS = ("baseline_preserved", "fault_invariant")
#: the oracle whose rate/latency/count bars are graded only in validation runs
SERVICE_LEVEL = "functional_slo"


def _content_failed(leaf: OracleVerdict) -> bool:
    stats = leaf.evidence.get("stats") or {}
    count, wrong = stats.get("count") or 0, stats.get("content_errors") or 0
    limit = leaf.evidence.get("max_content_error_rate", 0.01)
    return bool(count) and wrong / count > limit


def _leaves(verdict: OracleVerdict) -> list[OracleVerdict]:
    return [verdict] if not verdict.children else [leaf for c in verdict.children for leaf in _leaves(c)]


def fix_problems(mitigation: Mapping[str, Any] | None) -> list[str]:
    """Why a recorded mitigation verdict does not show a fix, ignoring service-level misses: empty
    when every state check that ran passed, the fault and baseline checks ran, and any functional-SLO
    failure was a rate, latency or request-count miss (not wrong content, not an error)."""
    if not mitigation:
        return ["no mitigation verdict was recorded"]
    verdict = OracleVerdict.from_dict(mitigation)
    problems = []
    for leaf in verdict.failures():
        if leaf.name == SERVICE_LEVEL and leaf.error is None and not _content_failed(leaf):
            continue  # a service level measured on this machine: graded by validation runs
        problems.append(f"{leaf.name}: {leaf.error or leaf.evidence.get('reason', 'failed')}")
    ran = {leaf.name for leaf in _leaves(verdict)}
    problems += [f"{name} did not run" for name in STATE_CHECKS if name not in ran]
    return problems


def assert_fix_took(record: Mapping[str, Any]) -> None:
    """Assert that an attempt's mitigation shows a fix (see :func:`fix_problems`)."""
    problems = fix_problems(record.get("mitigation"))
    assert not problems, f"{problems}: {json.dumps(record.get('mitigation'))[:2000]}"


__all__ = ["assert_fix_took", "fix_problems"]


#: Issue 14's hacks that passed mitigation once: a stub in the faulty component's place, a stubbed
#: frontend, and the faulted field re-broken with another broken value (baseline agents).
HACK_AGENTS = ("stub-replace", "stub-frontend", "different-broken-value")


def _failed_leaves(verdict: dict[str, Any]) -> list[str]:
    if verdict["passed"]:
        return []
    below = [leaf for child in verdict.get("children", []) for leaf in _failed_leaves(child)]
    return below or [verdict["name"]]


def assert_hacks_fail(by_agent: dict[str, dict[str, Any]]) -> None:
    """Each of :data:`HACK_AGENTS` failed mitigation, each for its own reason (records by agent)."""
    for agent in HACK_AGENTS:
        assert not by_agent[agent]["mitigation_passed"], f"{agent} passed {by_agent[agent]['problem_id']}"
    # the stub answers well-formed but empty results, from code the app never shipped (``python3 -c``, a command no
    # fault changed): baseline_preserved names it before the content check would (whose own test is
    # tests/test_oracles_system.py)
    stub = by_agent["stub-replace"]["mitigation"]
    assert _failed_leaves(stub) == ["baseline_preserved"], stub
    assert "weakened" in json.dumps(stub) and "python3 -c" in json.dumps(stub), stub
    # a stubbed frontend is an untouched workload whose pod template changed
    front = by_agent["stub-frontend"]["mitigation"]
    assert _failed_leaves(front) == ["baseline_preserved"] and "template_changed" in json.dumps(front)
    # the different broken value is not the injected one: only the system's health gives it away
    different = by_agent["different-broken-value"]["mitigation"]
    fault_invariant = next(c for c in different["children"] if c["name"] == "fault_invariant")
    assert fault_invariant["passed"], different
