"""The small JSONPath subset CRD ``additionalPrinterColumns`` use.

Supported: ``.a.b``, ``.a['b.c']``, ``.a[0]``, ``.a[-1]``, ``.a[*]``, and filters like
``.a[?(@.type=="Ready")].status`` (``==``/``!=`` against a string or number). Enough for the
columns real operators declare; anything else evaluates to no result instead of failing.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TOKEN = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-$/]+)
      | \[\s*'(?P<quoted>[^']*)'\s*\]
      | \[\s*"(?P<dquoted>[^"]*)"\s*\]
      | \[\s*(?P<index>-?\d+)\s*\]
      | \[\s*(?P<star>\*)\s*\]
      | \[\s*\?\(\s*@\.(?P<fpath>[A-Za-z0-9_.\-]+)\s*(?P<op>==|!=)\s*(?P<fvalue>"[^"]*"|'[^']*'|-?[0-9.]+|true|false)\s*\)\s*\]
    """,
    re.VERBOSE,
)


class JSONPathError(ValueError):
    pass


def _tokens(path: str) -> list[re.Match[str]]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    tokens = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:
            raise JSONPathError(f"unsupported JSONPath {path!r}")
        tokens.append(match)
        position = match.end()
    return tokens


def _literal(text: str) -> Any:
    if text[0] in "\"'":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    return json.loads(text)


def find(obj: Any, path: str) -> list[Any]:
    """All values ``path`` selects in ``obj`` (empty when nothing matches)."""
    current = [obj]
    for token in _tokens(path):
        following: list[Any] = []
        for value in current:
            if token.group("field") is not None or token.group("quoted") is not None or token.group("dquoted") is not None:
                key = next(g for g in (token.group("field"), token.group("quoted"), token.group("dquoted")) if g is not None)
                if isinstance(value, dict) and key in value:
                    following.append(value[key])
            elif token.group("index") is not None:
                index = int(token.group("index"))
                if isinstance(value, list) and -len(value) <= index < len(value):
                    following.append(value[index])
            elif token.group("star") is not None:
                if isinstance(value, list):
                    following.extend(value)
                elif isinstance(value, dict):
                    following.extend(value.values())
            else:
                expected = _literal(token.group("fvalue"))
                for item in value if isinstance(value, list) else []:
                    found = find(item, "." + token.group("fpath"))
                    matched = bool(found) and found[0] == expected
                    if matched == (token.group("op") == "=="):
                        following.append(item)
        current = following
    return current


def go_text(value: Any) -> str:
    """Render a value the way Go's jsonpath printer does (``fmt`` verbs, not JSON)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_text(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_text(v) for v in value) + "]"
    return str(value)
