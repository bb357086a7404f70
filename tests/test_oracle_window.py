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
