"""JSON Schema loading and validation with JSON paths in every error."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
from jsonschema import Draft202012Validator, validators

from .errors import ConfigError, UsageError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SCHEMA_DIR = Path(__file__).parent / "schemas"


def schema_names() -> list[str]:
    return sorted(p.name.removesuffix(".schema.json") for p in SCHEMA_DIR.glob("*.schema.json"))


@cache
def load_schema(name: str) -> dict[str, Any]:
    """Load ``schemas/<name>.schema.json``."""
    path = SCHEMA_DIR / f"{name}.schema.json"
    if not path.is_file():
        raise UsageError(f"no schema named {name!r}", hints=(f"known schemas: {', '.join(schema_names())}",))
    return json.loads(path.read_text())


def json_path(parts: Any) -> str:
    """Render a jsonschema error path as ``$.faults[0].target``."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _with_defaults(base: type[Validator]) -> type[Validator]:
    """A validator class that also fills ``default`` values in (so params arrive complete)."""
    validate_properties = base.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub and prop not in instance:
                    instance[prop] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return validators.extend(base, {"properties": set_defaults})


_DefaultingValidator = _with_defaults(Draft202012Validator)


def validate(instance: Any, schema: dict[str, Any], *, what: str, fill_defaults: bool = False,
             hints: tuple[str, ...] = ()) -> Any:
    """Validate ``instance``; raise :class:`ConfigError` listing every error with its JSON path.

    With ``fill_defaults`` a deep copy is returned with schema defaults filled in.
    """
    if fill_defaults:
        instance = copy.deepcopy(instance)
        validator = _DefaultingValidator(schema)
    else:
        validator = Draft202012Validator(schema)
    try:
        errors = sorted(validator.iter_errors(instance), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    except jsonschema.exceptions.SchemaError as exc:  # the schema itself is broken: a plugin bug
        raise ConfigError(f"the schema for {what} is invalid: {exc.message}") from exc
    if errors:
        raise ConfigError(
            f"{what} is invalid",
            errors=[(json_path(e.absolute_path), _explain(e)) for e in errors],
            source=what,
            hints=hints,
        )
    return instance


def _explain(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown key(s)")
    if error.validator == "oneOf" and list(error.absolute_path)[:1] == ["symptom"]:
        return ("must be slo-drop, pods-not-ready, 'alert-firing <AlertName>', error-logs or latent, "
                "a list of them, or {latent: true}")
    if error.validator == "oneOf" and isinstance(error.instance, dict | list):
        return "must be a name, {name: {params}} or {all|any: [...]}"
    return error.message
