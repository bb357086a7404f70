"""Column definitions, per-kind printer records and small helpers shared by the printers."""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# A description is either literal text or a (model class, python field) reference into the
# official client's generated models, whose field descriptions are the same API doc strings
# that the real server puts into its column definitions.
Description = str | tuple[str, str]


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "string"
    description: Description = ""
    priority: int = 0
    format: str = ""

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": resolve_description(self.description),
            "priority": self.priority,
        }


CellsFn = Callable[[dict[str, Any], datetime], list[Any]]
ConditionsFn = Callable[[dict[str, Any]], list[dict[str, Any]]]


@dataclass(frozen=True)
class Printer:
    columns: tuple[Column, ...]
    cells: CellsFn
    conditions: ConditionsFn | None = field(default=None)


def _module_name(model: str) -> str:
    # V1PodStatus -> v1_pod_status ; V2HorizontalPodAutoscalerSpec -> v2_horizontal_pod_autoscaler_spec
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", model).lower()


@functools.cache
def _model_doc(model: str, attribute: str) -> str:
    try:
        module = importlib.import_module(f"kubernetes.client.models.{_module_name(model)}")
        fields = getattr(module, model).model_fields
        return fields[attribute].description or ""
    except Exception:  # noqa: BLE001 - descriptions are cosmetic; never fail a table over them
        return ""


def resolve_description(description: Description) -> str:
    if isinstance(description, tuple):
        return _model_doc(*description)
    return description


NAME_DOC: Description = ("V1ObjectMeta", "name")
AGE_DOC: Description = ("V1ObjectMeta", "creation_timestamp")


def name_column() -> Column:
    return Column("Name", "string", NAME_DOC, format="name")


def age_column() -> Column:
    return Column("Age", "string", AGE_DOC)


# ---------------------------------------------------------------------------- helpers


def dig(obj: Any, *path: str | int, default: Any = None) -> Any:
    """Follow keys/indices through nested dicts and lists; ``default`` on any miss."""
    current = obj
    for key in path:
        if isinstance(key, int):
            if not isinstance(current, list) or not -len(current) <= key < len(current):
                return default
            current = current[key]
        else:
            if not isinstance(current, dict) or key not in current:
                return default
            current = current[key]
    return default if current is None else current


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def meta_name(obj: dict[str, Any]) -> str:
    return str(dig(obj, "metadata", "name", default=""))


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: ``k=v`` pairs sorted by key, ``<none>`` when empty."""
    pairs = as_dict(labels)
    if not pairs:
        return "<none>"
    return ",".join(f"{key}={pairs[key]}" for key in sorted(pairs))


def selector_string(selector: Any) -> str:
    """The string form of a ``metav1.LabelSelector`` (as ``labels.Selector.String()``).

    Requirements are sorted by key; set values are sorted; an empty selector is ``""``.
    Returns ``<invalid>`` for malformed selectors, like the real printers.
    """
    if not isinstance(selector, dict):
        return ""
    requirements: list[tuple[str, str]] = []
    for key, value in as_dict(selector.get("matchLabels")).items():
        requirements.append((key, f"{key}={value}"))
    for expression in as_list(selector.get("matchExpressions")):
        if not isinstance(expression, dict) or not expression.get("key"):
            return "<invalid>"
        key = str(expression["key"])
        operator = expression.get("operator")
        values = sorted({str(v) for v in as_list(expression.get("values"))})
        if operator == "In":
            requirements.append((key, f"{key} in ({','.join(values)})"))
        elif operator == "NotIn":
            requirements.append((key, f"{key} notin ({','.join(values)})"))
        elif operator == "Exists":
            requirements.append((key, key))
        elif operator == "DoesNotExist":
            requirements.append((key, f"!{key}"))
        else:
            return "<invalid>"
    requirements.sort(key=lambda item: item[0])
    return ",".join(text for _, text in requirements)


def format_label_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: like :func:`selector_string` but ``<none>`` when empty."""
    text = selector_string(selector)
    return text or "<none>"


def container_cells(containers: Any) -> tuple[str, str]:
    """``layoutContainerCells``: comma-joined container names and images."""
    items = [c for c in as_list(containers) if isinstance(c, dict)]
    return (
        ",".join(str(c.get("name", "")) for c in items),
        ",".join(str(c.get("image", "")) for c in items),
    )


def list_with_more(items: list[str], total: int, limit: int, empty: str) -> str:
    """Show at most ``limit`` items then ``+ N more...``, as several real printers do."""
    text = ",".join(items[:limit])
    if total > limit:
        return f"{text} + {total - limit} more..."
    return text or empty


def bool_ptr(value: Any) -> str:
    """``printBoolPtr``: ``True``/``False`` or ``<unset>``."""
    if value is None:
        return "<unset>"
    return "True" if value else "False"
