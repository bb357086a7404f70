"""docs/claims.md names, for each guarantee of README.md and SECURITY.md, tests that run in the
landing suite: each `file::test` it names, and each one README.md names as proof, is collected by
pytest here and is not skipped by default (no `matrix` or `validation` marker, no skip, no skipif
that holds on this machine). SECURITY.md's names are checked to exist by tests/test_security_doc.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ROOT / "docs" / "claims.md"
NAMED = re.compile(r"`((?:tests|(?:apps|faults|plugins|agents|libs)/[\w-]+/tests)/[\w/]+\.py)::(\w+)`")

#: run by a child pytest: collect the given files as the default run does (the root conftest adds
#: its skip markers) and print, per test function, whether the default run would skip it
COLLECT = r"""
import json, os, platform, sys
import pytest

def skipped(item):
    if item.get_closest_marker("skip") is not None:
        return "skip"
    for name in ("matrix", "validation"):
        if item.get_closest_marker(name) is not None:
            return name
    for mark in item.iter_markers("skipif"):
        conditions = mark.args or (mark.kwargs.get("condition"),)
        for condition in conditions:
            if isinstance(condition, str):
                scope = {"os": os, "sys": sys, "platform": platform, "config": item.config,
                         **getattr(item.obj, "__globals__", {})}
                condition = eval(condition, scope)
            if condition:
                return "skipif: " + str(mark.kwargs.get("reason", ""))
    return ""

class Grab:
    found = {}
    def pytest_collection_finish(self, session):
        for item in session.items:
            key = item.nodeid.split("[")[0]
            self.found.setdefault(key, []).append(skipped(item))

code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[Grab()])
print("COLLECTED " + json.dumps(Grab.found))
sys.exit(int(code))
"""


def named_tests() -> list[tuple[str, str]]:
    return sorted(set(NAMED.findall(CLAIMS.read_text())) | set(NAMED.findall((ROOT / "README.md").read_text())))


def test_claims_doc_names_tests_for_both_documents():
    text = CLAIMS.read_text()
    assert "## README.md" in text and "## SECURITY.md" in text
    named = NAMED.findall(text)
    assert len(named) >= 60
    # every row of the two guarantee tables names at least one test
    for section in ("## README.md", "## SECURITY.md"):
        body = text.split(section, 1)[1].split("\n## ", 1)[0]
        rows = [line for line in body.splitlines() if line.startswith("| ") and not line.startswith("| guarantee")]
        assert rows, section
        for row in rows:
            assert NAMED.search(row), f"{section}: a guarantee without a test: {row[:100]}"


def test_every_named_test_runs_in_the_default_suite():
    files = sorted({path for path, _ in named_tests()})
    missing_files = [f for f in files if not (ROOT / f).exists()]
    assert not missing_files, missing_files
    env = {k: v for k, v in os.environ.items() if k not in ("SREGYM_MATRIX", "SREGYM_VALIDATION")}
    # one child per package: packages' tests import their own `conftest` module by that name
    groups: dict[str, list[str]] = {}
    for f in files:
        groups.setdefault(f.split("/tests/")[0] if "/tests/" in f else "tests", []).append(f)
    collected: dict[str, list[str]] = {}
    for group in groups.values():
        done = subprocess.run([sys.executable, "-c", COLLECT, *group], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        line = next((x for x in done.stdout.splitlines() if x.startswith("COLLECTED ")), None)
        assert line is not None, (done.stdout + done.stderr)[-3000:]
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]  # a file that fails to collect
        collected.update(json.loads(line.removeprefix("COLLECTED ")))
    by_function: dict[str, list[str]] = {}
    for nodeid, reasons in collected.items():
        path, *rest = nodeid.split("::")
        by_function.setdefault(f"{path}::{rest[-1]}", []).extend(reasons)
    problems = []
    for path, function in named_tests():
        reasons = by_function.get(f"{path}::{function}")
        if reasons is None:
            problems.append(f"{path}::{function} is not collected")
        elif all(reasons):
            problems.append(f"{path}::{function} is skipped by default ({reasons[0]})")
    assert not problems, "\n".join(problems)


def test_what_rests_on_a_recorded_run_says_when():
    body = CLAIMS.read_text().split("## Resting on recorded runs", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("| ") and not line.startswith("| statement")]
    assert rows
    for row in rows:
        assert re.search(r"\b20\d\d-\d\d-\d\d\b", row), f"a recorded run without its date: {row[:100]}"


@pytest.mark.parametrize("line", ["`tests/test_cli.py::test_no_such_test`"])
def test_the_check_would_catch_a_test_that_does_not_exist(line):
    """The pattern reads the names the doc uses, and a made-up one is not among pytest's."""
    assert NAMED.findall(line) == [("tests/test_cli.py", "test_no_such_test")]
    assert not re.search(r"^\s*def test_no_such_test\(", (ROOT / "tests/test_cli.py").read_text(), flags=re.M)
