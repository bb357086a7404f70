"""Rules of the landing suite itself (docs/ci.md), checked over every test module of the repo.

1. Service-level helpers (``sregym_core.testing.slo``) are imported only by modules marked
   ``validation``: the landing suite grades no rate or latency measured on a shared machine.
2. No landing test compares a success rate with a bar (``success_rate >= 0.99``) or a latency or
   duration with a ceiling (``p95_ms < 500``, ``startup_seconds < 5``). Checks that a fault *shows*
   (a rate *below* a bar) are fine: on a slow machine they can only show more.
3. Every live test file has a recorded duration, and none exceeds its budget
   (``tests/suite_durations.json``, written by ``tools/suite_durations.py`` from a recorded
   ``.ci/run``), so a new live test cannot silently add ten minutes; the landing suite's projected
   wall time stays within its budget.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DURATIONS = ROOT / "tests" / "suite_durations.json"
#: the helpers' own unit tests (a fake clock and PSI file; nothing live): they may import the module
SLO_HELPER_UNIT_TESTS = {"tests/test_hostload.py"}
RATE_KEY = re.compile(r"success_rate|availability", re.I)
TIME_KEY = re.compile(r"^p\d\d(_ms|_s)?$|latency|elapsed|duration|_seconds$|^seconds$|wall", re.I)


def all_test_modules() -> list[Path]:
    skip = {".venv", "node_modules", ".git", "build"}
    return sorted(p for p in ROOT.rglob("test_*.py") if not skip & set(p.relative_to(ROOT).parts))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def marked(tree: ast.Module, marker: str) -> bool:
    """Whether the module's ``pytestmark`` names ``marker``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            if re.search(rf"\bmark\.{marker}\b", ast.unparse(node.value)):
                return True
    return False


def imports_slo(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("testing.slo"):
            return True
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("testing") \
                and any(a.name == "slo" for a in node.names):
            return True
        if isinstance(node, ast.Import) and any(a.name.endswith("testing.slo") for a in node.names):
            return True
    return False


def _key(node: ast.AST) -> str | None:
    """The name a compared value goes by: a subscript key, a ``.get`` key, a name or attribute."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and node.args and isinstance(node.args[0], ast.Constant):
        return str(node.args[0].value)
    if isinstance(node, ast.BoolOp):
        return next((k for k in map(_key, node.values) if k), None)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


_FLIP = {ast.Gt: ast.Lt, ast.Lt: ast.Gt, ast.GtE: ast.LtE, ast.LtE: ast.GtE}
_CLOCKS = {"monotonic", "time", "perf_counter", "monotonic_ns", "perf_counter_ns"}


def _clock_delta(node: ast.AST) -> bool:
    """``time.monotonic() - started`` (any clock read minus something): a duration measured here."""
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.left, ast.Call)
            and isinstance(node.left.func, ast.Attribute) and node.left.func.attr in _CLOCKS)


def _durations_assigned(tree: ast.AST) -> set[str]:
    """Names a module assigns a clock delta to (``drained = time.monotonic() - started``)."""
    return {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and _clock_delta(node.value)
            for target in node.targets if isinstance(target, ast.Name)}


#: a comparison on a line carrying a pragma, followed by the reason, is no performance bar: ``synthetic``
#: compares synthetic values (e.g. a histogram every request of which observes 0.3 s), ``outer-bound``
#: is a ceiling set by the test's own event, far above the expected time (the fake answers only after
#: 8 s; an unguarded parse would run for hours), so only the behaviour it guards can fail it
SYNTHETIC = re.compile(r"#\s*suite-rules: (synthetic|outer-bound) \(\w.{8,}\)")


def performance_bars(source: str) -> list[str]:
    """Comparisons of a measured rate with a floor, or of a latency/duration with a ceiling."""
    found = []
    lines = source.splitlines()
    tree = ast.parse(source)
    durations = _durations_assigned(tree)
    # a clock delta counts where it is asserted (a loop's own deadline is no verdict)
    asserted = {id(n) for a in ast.walk(tree) if isinstance(a, ast.Assert) for n in ast.walk(a)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or SYNTHETIC.search(lines[node.lineno - 1]):
            continue
        operands = [node.left, *node.comparators]
        for left, op, right in zip(operands, node.ops, operands[1:], strict=False):
            op_type = type(op)
            if isinstance(left, ast.Constant):
                left, right, op_type = right, left, _FLIP.get(op_type, op_type)
            if not (isinstance(right, ast.Constant) and isinstance(right.value, (int, float))
                    and not isinstance(right.value, bool)):
                continue
            if (_clock_delta(left) or (isinstance(left, ast.Name) and left.id in durations)) \
                    and op_type in (ast.Lt, ast.LtE) and id(node) in asserted:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
                continue
            key = _key(left)
            if not key:
                continue
            if RATE_KEY.search(key) and op_type in (ast.Gt, ast.GtE) and right.value > 0:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
            elif TIME_KEY.search(key) and op_type in (ast.Lt, ast.LtE):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_bar_scanner_finds_healthy_path_bars_and_leaves_fault_checks_alone():
    assert performance_bars("assert stats['success_rate'] >= 0.99") == ["line 1: stats['success_rate'] >= 0.99"]
    assert performance_bars("ok = 0.95 <= s.get('success_rate')")
    assert performance_bars("assert info.startup_seconds < 5")
    assert performance_bars("assert stats['p95_ms'] <= 800")
    # a duration measured with a clock, inline or through a name it was assigned to
    assert performance_bars("assert ok and time.monotonic() - started < 15")
    assert performance_bars("drained = time.monotonic() - t0\nassert drained < 8.0")
    assert performance_bars("assert time.monotonic() - started > 1.0") == []  # a floor: a slow machine passes
    assert performance_bars("while time.monotonic() - start < 2.0:\n    pass") == []  # a loop's deadline
    # a fault that shows, a count, a content check: not performance bars
    assert performance_bars("broken = stats['success_rate'] < 0.5") == []
    assert performance_bars("assert stats['success_rate'] == 0.0") == []
    assert performance_bars("assert stats['count'] >= 20 and stats['content_errors'] == 0") == []
    # synthetic values, said so with a reason; a bare pragma does not count
    assert performance_bars("assert p95 <= 0.5  # suite-rules: synthetic (each request observes 0.3 s)") == []
    assert performance_bars("assert p95 <= 0.5  # suite-rules: synthetic") != []
    assert performance_bars("assert time.monotonic() - t < 8  # suite-rules: outer-bound (the fake answers after 8 s)") == []


def test_service_level_helpers_are_imported_only_by_validation_modules():
    offenders = []
    for path in all_test_modules():
        tree = ast.parse(path.read_text())
        if imports_slo(tree) and not marked(tree, "validation") and _rel(path) not in SLO_HELPER_UNIT_TESTS:
            offenders.append(_rel(path))
    assert not offenders, ("these modules import sregym_core.testing.slo without `pytestmark = "
                           f"[..., pytest.mark.validation]`: {offenders}")
    # and the rule has something to hold: the validation modules that use the helpers exist
    assert any(imports_slo(ast.parse(p.read_text())) and marked(ast.parse(p.read_text()), "validation")
               for p in all_test_modules())


def test_no_landing_test_grades_a_rate_latency_or_duration():
    offenders = {}
    for path in all_test_modules():
        tree = ast.parse(path.read_text())
        if marked(tree, "validation") or path.name == Path(__file__).name:
            continue
        bars = performance_bars(path.read_text())
        if bars:
            offenders[_rel(path)] = bars
    # the harness the live tests call is held to the same rule (the SLO helpers are exempt: they
    # are the validation runs' own)
    for path in sorted((ROOT / "sregym_core" / "testing").glob("*.py")):
        if path.name != "slo.py":
            bars = performance_bars(path.read_text())
            if bars:
                offenders[_rel(path)] = bars
    assert not offenders, ("a landing test compares a measured rate, latency or duration with a bar; grade it "
                           f"in a `validation` module instead (docs/ci.md): {json.dumps(offenders, indent=1)}")


def test_the_solo_phase_is_gone():
    # solo once meant "grade a service level alone after the parallel phase"; such tests are validation now
    users = [_rel(p) for p in all_test_modules() if re.search(r"\bmark\.solo\b", p.read_text())]
    assert not users, users


# --- time budgets ---------------------------------------------------------------------------------


def _recorded() -> dict:
    if not DURATIONS.exists():
        # the rule starts holding with the first recorded run (docs/ci.md says how to record one)
        pytest.skip(f"no recorded run yet: {DURATIONS.relative_to(ROOT)} (python tools/suite_durations.py record ...)")
    return json.loads(DURATIONS.read_text())


def _live_modules() -> list[str]:
    """Test files with a live test (marker slow) that the landing suite runs (not all validation)."""
    live = []
    for path in all_test_modules():
        text = path.read_text()
        if "mark.slow" not in text or path.name == Path(__file__).name:
            continue
        if marked(ast.parse(text), "validation"):
            continue
        live.append(_rel(path))
    return live


def test_every_live_test_file_has_a_recorded_duration():
    recorded = _recorded()["files"]
    missing = [f for f in _live_modules() if f not in recorded]
    assert not missing, ("live test files without a recorded duration: run .ci/run (or ./test.sh --junitxml=...) "
                         f"and `python tools/suite_durations.py record <junit.xml>`: {missing}")


def test_no_test_file_exceeds_its_budget():
    data = _recorded()
    default, budgets = data["default_budget_s"], data.get("budgets", {})
    over = {f: (round(s), budgets.get(f, default)) for f, s in data["files"].items() if s > budgets.get(f, default)}
    assert not over, ("test files over their time budget (recorded seconds, budget); make them shorter, move "
                      f"what grades the machine to a validation module, or raise the budget with a reason: {over}")
    for f, reason in data.get("budget_reasons", {}).items():
        assert f in budgets and reason, f"a raised budget needs its reason: {f}"
    assert set(budgets) <= set(data.get("budget_reasons", {})), "every raised budget says why"


def test_the_projected_landing_time_is_within_budget():
    data = _recorded()
    lanes = data["lanes"]
    total = sum(data["files"].values())
    workers = data["workers"]
    # each live lane is one worker's chain; all the work spreads over every worker (the lanes' included)
    projected = max(max(lanes.values()), total / workers)
    assert projected <= data["suite_budget_s"], (f"projected landing suite {projected:.0f} s > "
                                                 f"{data['suite_budget_s']} s (lanes {lanes}, all {total:.0f} s)")


def test_the_lanes_are_the_sums_of_their_files():
    data = _recorded()
    for lane, seconds in data["lanes"].items():
        mine = sum(data["files"][f] for f, where in data["lane_files"].items() if where == lane)
        assert abs(mine - seconds) < 1, (lane, mine, seconds)


@pytest.mark.parametrize("key", ["files", "default_budget_s", "suite_budget_s", "lanes", "lane_files", "workers",
                                 "recorded"])
def test_the_durations_record_is_complete(key):
    assert key in _recorded()


def test_durations_are_read_per_file_with_the_lanes_apart(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("suite_durations", ROOT / "tools" / "suite_durations.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_suite_rules" name="test_a" time="1.5"/>'
        '<testcase classname="tests.test_suite_rules" name="test_b" time="2.0"/>'
        '<testcase classname="tests.e2e.test_hackers" name="test_c[x]" time="100.0">'
        '<properties><property name="live_lane" value="live-apps"/></properties></testcase>'
        '<testcase classname="tests.e2e.test_rl_env_e2e" name="test_e" time="40.0">'
        '<properties><property name="live_lane" value="live-apps-2"/></properties></testcase>'
        '<testcase classname="tests.e2e.test_noise_live" name="test_f" time="7.0">'
        '<properties><property name="live_lane" value="1"/></properties></testcase>'  # a run before the second lane
        '<testcase classname="no.such.module" name="test_d" time="9.0"/>'
        '</testsuite></testsuites>')
    files, lane_files = tool.read_junit(junit)
    assert files == {"tests/test_suite_rules.py": 3.5, "tests/e2e/test_hackers.py": 100.0,
                     "tests/e2e/test_rl_env_e2e.py": 40.0, "tests/e2e/test_noise_live.py": 7.0}
    assert lane_files == {"tests/e2e/test_hackers.py": "live-apps", "tests/e2e/test_rl_env_e2e.py": "live-apps-2",
                          "tests/e2e/test_noise_live.py": "live-apps"}
    assert tool.lane_seconds(files, lane_files) == {"live-apps": 107.0, "live-apps-2": 40.0}


def test_property_tests_draw_the_same_examples_on_every_landing_run():
    """A landing check must not fail on an example no earlier run drew (r24, 2026-11-30: a random fuzz
    example found a 500 in the middle of a landing check): the root conftest loads a derandomized
    Hypothesis profile unless SREGYM_HYPOTHESIS=explore asks for a random search."""
    import os

    from hypothesis import settings

    if os.environ.get("SREGYM_HYPOTHESIS") == "explore":
        pytest.skip("a random search was asked for")
    assert settings.default.derandomize is True and settings.default.database is None
