"""`--oracle-window` (and SREGYM_ORACLE_WINDOW, which the landing suite sets): the functional SLO is
measured over the given window, and its request floor keeps the problem's own rate."""

from __future__ import annotations

import pytest

from sregym_core.conductor.attempt import _override_window
from sregym_core.oracles.mitigation import FunctionalSLO


def test_the_request_floor_scales_with_the_window():
    config = {"all": ["baseline_preserved", {"functional_slo": {"window_s": 15, "min_requests": 20}}]}
    out = _override_window(config, 5)
    assert out == {"all": ["baseline_preserved", {"functional_slo": {"window_s": 5, "min_requests": 7}}]}
    assert config["all"][1]["functional_slo"] == {"window_s": 15, "min_requests": 20}  # not mutated


@pytest.mark.parametrize("config", ["functional_slo", {"functional_slo": None}, ["functional_slo"]])
def test_a_bare_slo_takes_the_defaults_rate(config):
    out = _override_window(config, 6)
    slo = (out[0] if isinstance(out, list) else out)["functional_slo"]
    defaults = FunctionalSLO()
    assert slo["window_s"] == 6
    assert slo["min_requests"] == -(-defaults.min_requests * 6 // int(defaults.window_s))


def test_a_longer_window_asks_for_more_requests_and_no_floor_stays_none():
    assert _override_window({"functional_slo": {"window_s": 10, "min_requests": 20}}, 30)["functional_slo"][
        "min_requests"] == 60
    assert _override_window({"functional_slo": {"min_requests": 0}}, 5)["functional_slo"]["min_requests"] == 0


def test_the_run_command_reads_the_window_from_the_environment():
    from click.testing import CliRunner

    from sregym_core.cli import cli

    help_text = CliRunner().invoke(cli, ["run", "--help"]).output
    assert "SREGYM_ORACLE_WINDOW" in help_text
    option = next(p for p in cli.get_command(None, "run").params if p.name == "oracle_window")
    assert option.envvar == "SREGYM_ORACLE_WINDOW"


def test_the_grading_grace_cap_shortens_graces_only_where_set(monkeypatch):
    from sregym_core.conductor.attempt import AttemptSettings, grading_grace
    from sregym_core.errors import ConfigError

    defaults = AttemptSettings()
    monkeypatch.delenv("SREGYM_GRADING_GRACE", raising=False)
    assert grading_grace(defaults.mitigation_grace) == defaults.mitigation_grace == 2.0
    assert grading_grace(defaults.reconnect_grace) == defaults.reconnect_grace == 3.0
    monkeypatch.setenv("SREGYM_GRADING_GRACE", "0.5")
    assert grading_grace(defaults.mitigation_grace) == 0.5 and grading_grace(0.2) == 0.2  # a cap, never longer
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("SREGYM_GRADING_GRACE", bad)
        with pytest.raises(ConfigError, match="SREGYM_GRADING_GRACE"):
            grading_grace(2.0)


def test_the_landing_suite_caps_the_graces_and_validation_keeps_them():
    import os

    # conftest.py sets both for the landing suite (this process); `--validation` sets neither
    assert os.environ.get("SREGYM_VALIDATION") == "1" or (
        os.environ["SREGYM_ORACLE_WINDOW"] == "5" and os.environ["SREGYM_GRADING_GRACE"] == "0.5")
