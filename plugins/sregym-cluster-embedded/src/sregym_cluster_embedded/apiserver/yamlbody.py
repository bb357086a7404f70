"""YAML request bodies turned into the JSON the rest of the API server handles.

The real API server converts YAML to JSON before decoding it (sigs.k8s.io/yaml): a mapping key
that is a number or a boolean becomes its string form, and anything JSON cannot hold (a null or
nested key, a set, a non-finite number) is a bad request. PyYAML hands back more than JSON has
(a bare ``?`` makes a ``None`` key, ``2020-01-01`` a ``date``), which the code after decoding never
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


def to_json_value(value: Any, path: str = "", seen: dict[int, Any] | None = None,
                  open_: set[int] | None = None) -> Any:
    """``value`` as JSON values. A YAML alias is one Python object reached from several places, so
    each container is converted once (``seen``) and its copy shared the same way: an alias bomb
    stays as small here as PyYAML built it, for the size checks after decoding to refuse. An alias
    inside its own anchor (``&a [*a]``) is a cycle, which JSON cannot hold (``open_``: the
    containers being converted)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise YamlBodyError(f"{path or 'the document'}: {value} has no JSON form")
        return value
    seen = {} if seen is None else seen
    open_ = set() if open_ is None else open_
    if id(value) in open_:
        raise YamlBodyError(f"{path or 'the document'}: an alias inside its own anchor (a cycle) has no JSON form")
    if id(value) in seen:
        return seen[id(value)]
    if isinstance(value, (dict, list)):
        open_.add(id(value))
        if isinstance(value, dict):
            converted: Any = {}
            for key, child in value.items():
                name = _key(key, path)
                converted[name] = to_json_value(child, f"{path}.{name}", seen, open_)
        else:
            converted = [to_json_value(child, f"{path}[{i}]", seen, open_) for i, child in enumerate(value)]
        open_.discard(id(value))
        seen[id(value)] = converted
        return converted
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
