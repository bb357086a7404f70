"""The flapping-alert noise source's exporter against real Prometheus with the project's own alert
rules: its target flaps, so ``TargetDown`` about it fires, resolves and fires again; once the
exporter is gone for good (revert), the alert resolves and stays resolved.

The exporter script is the one the source puts in its pod (``sources._flapping_exporter``), run here
as a local process with short up/down periods; the rules are ``alert_rules`` rendered with a short
``for``. The live noise test shows the pod itself on the embedded cluster.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time

import httpx
import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not shutil.which("prometheus"), reason="prometheus is not installed")]

UP_S, DOWN_S = 4, 8


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_target_down_flaps_then_resolves_for_good(tmp_path):
    from sregym_noise_basic.sources import _flapping_exporter
    from sregym_observability.prometheus_config import PrometheusSettings, alert_rules

    rules = alert_rules(PrometheusSettings(alert_for="1s", evaluation_interval="1s"))
    target_down = [r for g in rules["groups"] for r in g["rules"] if r["alert"] == "TargetDown"]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "t", "interval": "1s", "rules": target_down}]}))
    exporter_port, prom_port = free_port(), free_port()
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "500ms"},
        "rule_files": ["rules.yml"],
        "scrape_configs": [{"job_name": "pods", "file_sd_configs": [{"files": [str(tmp_path / "targets.json")]}]}]}))
    # discovery as on the cluster (there: the pods the exporter finds), here a file Prometheus watches
    discovered = [{"targets": [f"127.0.0.1:{exporter_port}"],
                   "labels": {"namespace": "hotel-reservation", "pod": "rate-sync-exporter-1a2b3"}}]
    (tmp_path / "targets.json").write_text(json.dumps(discovered))
    exporter = subprocess.Popen([sys.executable, "-u", "-c", _flapping_exporter(UP_S, DOWN_S, exporter_port)],
                                stdout=subprocess.DEVNULL)
    prometheus = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                                   f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                   f"--web.listen-address=127.0.0.1:{prom_port}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{prom_port}/api/v1/alerts"
    states: list[str] = []  # the TargetDown state, sampled; "" when the alert is inactive

    def sample() -> None:
        try:
            alerts = httpx.get(url, timeout=1).json()["data"]["alerts"]
        except (httpx.HTTPError, ValueError, KeyError):
            return
        state = next((a["state"] for a in alerts if a["labels"].get("alertname") == "TargetDown"), "")
        if not states or states[-1] != state:
            states.append(state)

    try:
        deadline = time.monotonic() + 4 * (UP_S + DOWN_S) + 15
        while time.monotonic() < deadline and states.count("firing") < 2:
            sample()
            time.sleep(0.3)
        assert states.count("firing") >= 2 and "" in states[states.index("firing"):], states  # fired, resolved, fired
        alerts = [a for a in httpx.get(url, timeout=2).json()["data"]["alerts"] if a["labels"].get("alertname") == "TargetDown"]
        # about the exporter beside rate (an empty list would say nothing: the alert was just seen firing)
        assert alerts and all(a["labels"]["pod"] == "rate-sync-exporter-1a2b3" for a in alerts)
        # revert deletes the pod: discovery drops the target, Prometheus marks its series stale
        exporter.terminate()
        exporter.wait(timeout=10)
        (tmp_path / "targets.json").write_text("[]")
        states.clear()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and states[-1:] != [""]:
            sample()
            time.sleep(0.3)
        assert states[-1:] == [""], states
        time.sleep(2 * (UP_S + DOWN_S) / 3)
        sample()
        assert states[-1] == "", states  # and it stays resolved
    finally:
        for process in (exporter, prometheus):
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=10)
