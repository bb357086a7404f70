"""What ``/get_app`` tells an agent about each installed app: upstream's display name and one
paragraph on what the app is, as upstream's metadata gives (upstream-parity.md, "Upstream app
display names"); configuration knobs, ports and metric names are for the agent to find."""

from __future__ import annotations

import re
import types

import pytest

from sregym_core.conductor.attempt import Attempt
from sregym_core.plugins import process_host

UPSTREAM_NAMES = {"hotel-reservation": "Hotel Reservation", "social-network": "Social Network",
                  "astronomy-shop": "OpenTelemetry Demo Astronomy Shop", "train-ticket": "Train Ticket"}
#: what a hint looks like: an env knob (RPC_RETRIES), a metric (hotel_rpc_requests_total), a port
HINT = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[a-z]+_[a-z_]+(_total|_seconds|_bucket)?\b|:\d{2,5}\b|\bport \d+")


@pytest.fixture(scope="module")
def apps():
    found = {name: spec for name, spec in process_host().get_apps().items() if name in UPSTREAM_NAMES}
    if not found:
        pytest.skip("no app plugin installed")
    return found


def test_every_app_has_upstreams_display_name_and_a_paragraph_without_hints(apps):
    for name, app in apps.items():
        assert app.display_name == UPSTREAM_NAMES[name]
        text = app.description.strip()
        assert 100 < len(text) <= 600 and "\n\n" not in text, f"{name}: not one paragraph"
        assert not HINT.findall(text), f"{name}: the description names {HINT.findall(text)}"


def test_get_app_answers_with_the_display_name(apps):
    app = apps.get("hotel-reservation") or next(iter(apps.values()))
    attempt = types.SimpleNamespace(deployed=types.SimpleNamespace(app=app))
    info = Attempt.app_info(attempt)
    assert info == {"app_name": UPSTREAM_NAMES[app.name], "namespace": app.namespace, "namespaces": [app.namespace],
                    "descriptions": app.description}
