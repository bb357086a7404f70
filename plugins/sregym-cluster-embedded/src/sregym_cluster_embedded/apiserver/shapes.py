"""Reading a field of a stored or submitted object whose shape is not guaranteed: a mapping or a list
where one is expected, else an empty one (the body may carry anything the JSON allows)."""

from __future__ import annotations

from typing import Any


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` itself when it is a mapping, else a new empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` itself when it is a list, else a new empty one."""
    return value if isinstance(value, list) else []
