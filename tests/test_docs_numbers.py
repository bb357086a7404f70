"""Every count the docs give about the catalogue equals what the CLI says today.

The counts are claims in tools/generate_docs.py (a sentence's pattern and the facts its numbers must
equal, from `sregym list-problems/list-apps/list-faults/schema --json`); `python tools/generate_docs.py`
rewrites them. The whole generated pages (docs/compatibility.md, docs/upstream-aliases.md) are
checked by tests/test_curated_problems.py and tests/test_upstream_aliases.py.
"""

from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import generate_docs  # noqa: E402

PACKAGE_GROUPS = ("apps", "faults", "plugins", "agents", "libs")


@pytest.fixture(scope="module")
def facts() -> dict[str, int]:
    import importlib.util

    apps = [generate_docs.UPSTREAM_APPS[code] for code in ("HR", "AS", "SN", "TT")]
    if not all(_installed(app) for app in apps) or importlib.util.find_spec("sregym_judge_rules") is None:
        pytest.skip("the docs count the whole catalogue: needs the four app packages and judge-rules")
    return generate_docs.derived(generate_docs.load_facts())


def _installed(app: str) -> bool:
    import importlib.util

    return importlib.util.find_spec("sregym_app_" + app.replace("-", "_")) is not None


def test_every_counted_claim_in_the_docs_is_current(facts):
    problems = generate_docs.stale_claims()
    assert not problems, "\n".join(problems) + "\n(run python tools/generate_docs.py)"


def test_the_claims_reach_every_kind_of_doc():
    """README, the docs and the package READMEs all have claims; every package README is scanned."""
    claimed = {c.path for c in generate_docs.CLAIMS}
    assert "README.md" in claimed and "docs/real-clusters.md" in claimed
    assert {p.split("/")[0] for p in claimed} >= {"README.md", "docs", "apps", "plugins"}
    scanned = set(generate_docs.doc_paths())
    for group in PACKAGE_GROUPS:
        readmes = {str(p.relative_to(ROOT)) for p in (ROOT / group).glob("*/README.md")}
        assert readmes and readmes <= scanned, group
    assert "SECURITY.md" in scanned and "docs/rl.md" in scanned
    dated = [str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*-20??-??-??.md")]
    assert not set(dated) & scanned  # a page dated in its name is that day's record


def test_a_drifted_number_is_reported_with_the_cli_value(facts):
    text = (ROOT / "README.md").read_text()
    equivalent = facts["upstream:equivalent"]
    drifted = re.sub(rf"\b{equivalent} of upstream's", f"{equivalent - 1} of upstream's", text, count=1)
    assert drifted != text
    fixed, problems = generate_docs.apply_claims("README.md", drifted, facts)
    assert [p for p in problems if "says" in p] == [
        f"README.md:{_line_of(drifted, f'{equivalent - 1} of upstream')}: says {equivalent - 1}, "
        f"the CLI says {equivalent} (upstream:equivalent)"]
    assert fixed == text  # writing puts the CLI's number back and changes nothing else


def test_a_number_written_as_a_word_is_checked_and_written_as_a_word(facts):
    text = (ROOT / "README.md").read_text()
    noise = facts["tagged:hotel-reservation:noise"]
    word = generate_docs.WORDS[noise]
    assert f"({word} curated Hotel Reservation problems" in text
    wrong = generate_docs.WORDS[noise + 1]
    drifted = text.replace(f"({word} curated", f"({wrong} curated", 1)
    fixed, problems = generate_docs.apply_claims("README.md", drifted, facts)
    assert any(f"says {wrong}, the CLI says {word}" in p for p in problems), problems
    assert fixed == text


def test_a_reworded_sentence_is_reported_not_skipped(facts):
    text = (ROOT / "README.md").read_text()
    reworded = re.sub(r"of upstream's (\d+) ids are aliases", r"of the \1 upstream ids are aliases", text, count=1)
    assert reworded != text
    problems = generate_docs.apply_claims("README.md", reworded, facts)[1]
    assert any("matches 0 times" in p and "ids are aliases" in p for p in problems), problems


def test_a_count_no_claim_checks_is_reported():
    text = (ROOT / "README.md").read_text() + "\nSocial Network also ships 7 curated problems for noise.\n"
    found = generate_docs.uncounted_numbers("README.md", text)
    assert found == [f"README.md:{text.count(chr(10))}: '7 curated problems' is a count no claim checks: add a Claim "
                     "in tools/generate_docs.py (or date it as a run record)"]
    # the same sentence in a dated run record is what that run saw, not a claim about today
    dated = (ROOT / "README.md").read_text() + "\nOn 2026-11-27 the run covered 7 curated problems.\n"
    assert generate_docs.uncounted_numbers("README.md", dated) == []


def test_every_package_has_a_tox_environment():
    """Every package with tests is run by a tox environment that tox's default list and the
    `plugins` label both include (README.md: Layout)."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    commands = tox["testenv"]["commands"]
    env_list = tox["tox"]["env_list"]
    label = tox["testenv"]["labels"] if "labels" in tox["testenv"] else tox["tox"].get("labels", "")
    factors = {}
    for line in commands.strip().splitlines():
        factor, _, command = line.strip().partition(":")
        for path in re.findall(r"\{tox_root\}/([\w./-]+)/tests", command):
            factors[path] = factor.strip()
    packages = sorted(str(p.parent.relative_to(ROOT)) for group in PACKAGE_GROUPS
                      for p in (ROOT / group).glob("*/tests") if (p.parent / "pyproject.toml").exists()
                      and not p.parent.name.startswith("_"))  # apps/_template: copied, never installed
    assert len(packages) >= 20
    missing = [p for p in packages if p not in factors]
    assert not missing, f"packages whose tests no tox environment runs: {missing}"
    envs = set(re.findall(r"[\w-]+", re.sub(r"py311-\{([^}]*)\}", r"\1", env_list)))
    for package, factor in factors.items():
        if package == ".":
            continue
        assert factor in envs, f"{factor} ({package}) is not in env_list"
        assert f"py311-{factor}" in label, f"py311-{factor} ({package}) is not in the plugins label"


def _line_of(text: str, needle: str) -> int:
    return text.count("\n", 0, text.index(needle)) + 1


def test_a_pending_claim_is_checked_once_its_sentence_exists(monkeypatch):
    """A sentence another change is still writing: absent is fine, present it must be right."""
    claim = generate_docs.Claim("x.md", rf"ships {generate_docs.N} problems", ("problems",), pending=True)
    monkeypatch.setattr(generate_docs, "CLAIMS", (claim,))
    assert generate_docs.apply_claims("x.md", "nothing here yet\n", {"problems": 5})[1] == []
    assert generate_docs.apply_claims("x.md", "it ships 5 problems\n", {"problems": 5})[1] == []
    assert generate_docs.apply_claims("x.md", "it ships 4 problems\n", {"problems": 5})[1] == [
        "x.md:1: says 4, the CLI says 5 (problems)"]
