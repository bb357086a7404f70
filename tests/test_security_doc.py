"""SECURITY.md claims only what a test proves: every test it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_test_named_in_security_md_exists():
    text = (ROOT / "SECURITY.md").read_text()
    named = re.findall(r"`((?:tests|(?:agents|plugins|apps|faults)/[\w-]+/tests)/[\w/]+\.py)(?:::(\w+))?`", text)
    assert len(named) >= 10
    for path, function in named:
        source = ROOT / path
        assert source.exists(), path
        if function:
            assert re.search(rf"^\s*(?:async )?def {function}\(", source.read_text(), flags=re.M), f"{path}::{function}"


def test_every_test_function_named_in_security_md_exists_in_a_named_file():
    text = (ROOT / "SECURITY.md").read_text()
    files = {path for path, _ in re.findall(r"`((?:tests|(?:agents|plugins|apps|faults)/[\w-]+/tests)/[\w/]+\.py)(?:::(\w+))?`", text)}
    sources = "\n".join((ROOT / path).read_text() for path in files if (ROOT / path).exists())
    functions = set(re.findall(r"`(test_\w+)`", text))
    assert len(functions) >= 15
    missing = [f for f in sorted(functions) if not re.search(rf"^\s*(?:async )?def {f}\(", sources, flags=re.M)]
    assert not missing, missing
