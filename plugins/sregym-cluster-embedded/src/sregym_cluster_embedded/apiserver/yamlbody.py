"""YAML request bodies turned into the JSON the rest of the API server handles.

The real API server converts YAML to JSON before decoding it (sigs.k8s.io/yaml): a mapping key
that is a number or a boolean becomes its string form, and anything JSON cannot hold (a null or
nested key, a set, a non-finite number) is a bad request. PyYAML hands back more than JSON has
(``? x`` makes a ``None`` key, ``2020-01-01`` a ``date``), which the code after decoding never
expects; this module is the one place that narrows it.
"""

from __future__ import annotations

import base64
import datetime
import math
from typing import Any

import yaml


class YamlBodyError(ValueError):
    """A YAML document that has no JSON form."""


def load_json_compatible(text: str) -> Any:
    """``yaml.safe_load(text)`` as JSON values; :class:`YamlBodyError` (or ``yaml.YAMLError``) when
    the document cannot be one."""
    return to_json_value(yaml.safe_load(text))


def to_json_value(value: Any, path: str = "") -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise YamlBodyError(f"{path or 'the document'}: {value} has no JSON form")
        return value
    if isinstance(value, dict):
        return {_key(key, path): to_json_value(child, f"{path}.{_key(key, path)}") for key, child in value.items()}
    if isinstance(value, list):
        return [to_json_value(child, f"{path}[{i}]") for i, child in enumerate(value)]
    if isinstance(value, datetime.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):  # !!binary: base64, as JSON carries bytes
        return base64.b64encode(value).decode()
    raise YamlBodyError(f"{path or 'the document'}: a YAML {type(value).__name__} has no JSON form")


def _key(key: Any, path: str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float) and math.isfinite(key):
        return repr(key)
    raise YamlBodyError(f"{path or 'the document'}: unsupported map key {key!r} (a YAML {type(key).__name__}); "
                        "keys must be strings")
