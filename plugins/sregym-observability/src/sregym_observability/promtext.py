"""Writing the Prometheus text exposition format (version 0.0.4)."""

from __future__ import annotations

from collections.abc import Mapping

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


class MetricFamilies:
    """Collects samples grouped by metric name, then renders HELP/TYPE headers and samples."""

    def __init__(self) -> None:
        self._families: dict[str, tuple[str, str, list[str]]] = {}

    def declare(self, name: str, kind: str, help_text: str) -> None:
        self._families.setdefault(name, (kind, help_text, []))

    def add(self, name: str, labels: Mapping[str, str], value: float) -> None:
        if name not in self._families:
            self.declare(name, "gauge", name.replace("_", " "))
        rendered = ",".join(f'{k}="{escape_label(str(v))}"' for k, v in labels.items())
        self._families[name][2].append(f"{name}{{{rendered}}} {format_value(value)}")

    def render(self) -> str:
        out: list[str] = []
        for name, (kind, help_text, samples) in self._families.items():
            if not samples:
                continue
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")
            out.extend(samples)
        return "\n".join(out) + "\n"
