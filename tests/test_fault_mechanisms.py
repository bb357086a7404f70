"""Fault mechanisms (issue 36): the vocabulary, ``sregym list-faults`` on the selected cluster (a
fault shows with the mechanism that would run, hidden where none is available, ``--all`` gives
the probe's reason), and the ``fault_mechanism`` field of result rows (JSONL, CSV, schema)."""

from __future__ import annotations

import csv
import json
import types

import pytest
import sregym_noop.plugin

from sregym_core import hookimpl
from sregym_core import mechanisms as mech
from sregym_core.conductor.attempt import Attempt
from sregym_core.errors import ConfigError, PluginError
from sregym_core.results import ResultsWriter
from sregym_core.results.record import AttemptRecord
from sregym_core.results.schema import validate_record_dict
from sregym_core.testing import StateFault
from sregym_core.types import ClusterProviderSpec, FaultSpec

DECLARED = {"fsync": ("bpf-lsm", "seccomp-supervisor", "ld-preload-shim"), "connect": ("bpf-cgroup",)}


def test_a_fault_may_only_name_mechanisms_of_the_vocabulary() -> None:
    with pytest.raises(PluginError, match="unknown fault mechanism"):
        FaultSpec(name="bad", impl=StateFault(), mechanisms={"fsync": ("seccomp",)})
    assert FaultSpec(name="good", impl=StateFault(), mechanisms=DECLARED).mechanisms["connect"] == ("bpf-cgroup",)


def test_the_strongest_available_mechanism_per_operation_is_chosen() -> None:
    probe = {"bpf-lsm": {"available": False, "reason": "EPERM"},
             "seccomp-supervisor": {"available": True, "operations": ["fsync", "read"]},
             "bpf-cgroup": {"available": False, "reason": "needs root"}}
    assert mech.choose(DECLARED, probe) == {"fsync": "seccomp-supervisor", "connect": None}
    assert mech.choose(DECLARED, probe, {"syscall": "connect"}) == {"connect": None}
    assert mech.operations(DECLARED, {"syscall": "fsync"}) == ["fsync"]
    reason = mech.unavailable_reason({"connect": DECLARED["connect"]}, probe)
    assert reason == "no fault mechanism available (connect: bpf-cgroup: needs root)"
    assert mech.reason({}, "bpf-lsm") == "not probed on this cluster"


class Probing:
    """A cluster handle that answers the mechanism probe (what the embedded provider does)."""

    probe: dict = {}

    def __init__(self, name: str = "sregym", **_options) -> None:
        self.name = name

    def fault_mechanisms(self) -> dict:
        return dict(Probing.probe)


@pytest.fixture
def mechanism_plugins(register_plugin, fake_app):
    class Plugin:
        @hookimpl
        def sregym_apps(self):
            return [fake_app]

        @hookimpl
        def sregym_faults(self):
            return [FaultSpec(name="fsync-fail", summary="x", impl=StateFault(), layer="os",
                              mechanisms={"fsync": DECLARED["fsync"]}),
                    FaultSpec(name="plain", summary="y", impl=StateFault())]

        @hookimpl
        def sregym_clusters(self):
            return [ClusterProviderSpec(name="probing", factory=Probing, default=True)]

    register_plugin(Plugin(), name="mechanisms")


def test_list_faults_shows_the_mechanism_that_would_run_and_hides_a_fault_with_none(
        sregym_cli, mechanism_plugins) -> None:
    Probing.probe = {"bpf-lsm": {"available": False, "reason": "the kernel refused (EPERM)"},
                     "seccomp-supervisor": {"available": True, "operations": ["fsync"]}}
    table = sregym_cli("list-faults").assert_success().output
    row = next(line for line in table.splitlines() if line.startswith("fsync-fail"))
    assert "fsync: seccomp-supervisor" in row and "fake-app/api" in row
    data = json.loads(sregym_cli("list-faults", "--json").assert_success().output)
    fault = next(f for f in data["faults"] if f["name"] == "fsync-fail")
    assert fault["mechanisms"]["fsync"]["runs"] == "seccomp-supervisor"
    assert fault["mechanisms"]["fsync"]["candidates"][0] == {
        "name": "bpf-lsm", "available": False, "reason": "the kernel refused (EPERM)"}
    assert "mechanisms" not in next(f for f in data["faults"] if f["name"] == "plain")

    # a cluster whose nodes run none of its mechanisms: hidden; --all says why
    Probing.probe = {"bpf-lsm": {"available": False, "reason": "the kernel refused (EPERM)"},
                     "seccomp-supervisor": {"available": False, "reason": "off"}}
    table = sregym_cli("list-faults").assert_success().output
    assert not any(line.startswith("fsync-fail") for line in table.splitlines())
    assert "no mechanism on this probing cluster (--all shows why): fsync-fail" in table
    assert any(line.startswith("plain") for line in table.splitlines())
    data = json.loads(sregym_cli("list-faults", "--json").assert_success().output)
    assert [f["name"] for f in data["faults"]] == ["plain"]
    assert {p["fault"] for p in data["pairs"]} == {"plain"}
    every = json.loads(sregym_cli("list-faults", "--json", "--all").assert_success().output)
    hidden = next(f for f in every["faults"] if f["name"] == "fsync-fail")
    assert hidden["mechanism_reason"] == ("no fault mechanism available (fsync: bpf-lsm: the kernel refused (EPERM); "
                                          "seccomp-supervisor: off; ld-preload-shim: not probed on this cluster)")
    assert {p["reason"] for p in every["pairs"] if p["fault"] == "fsync-fail"} == {hidden["mechanism_reason"]}
    table = sregym_cli("list-faults", "--all").assert_success().output
    assert "seccomp-supervisor: off" in next(line for line in table.splitlines() if line.startswith("fsync-fail"))


def test_the_catalog_page_says_which_mechanism_each_environment_runs(sregym_cli, mechanism_plugins) -> None:
    markdown = sregym_cli("list-faults", "--format", "markdown").assert_success().output
    assert "## Fault mechanisms per environment" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| fsync-fail | fsync |"))
    # the CI's machine kind runs the supervisor; a real cluster runs none of them yet
    assert row.endswith("| seccomp-supervisor | none |"), row


def _record(**changes) -> AttemptRecord:
    return AttemptRecord(**{"run_id": "r1", "problem_id": "p", "agent": "a", "attempt": 1,
                            "started_at": "2026-11-29T03:00:00.000Z", **changes})


def test_result_rows_carry_the_fault_mechanism(tmp_path) -> None:
    writer = ResultsWriter(tmp_path)
    writer.append(_record(fault_mechanism="seccomp-supervisor"))
    writer.append(_record(attempt=2))
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [line["fault_mechanism"] for line in lines] == ["seccomp-supervisor", None]
    with open(tmp_path / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["fault_mechanism"] for row in rows] == ["seccomp-supervisor", ""]
    assert writer.records()[0].fault_mechanism == "seccomp-supervisor"
    validate_record_dict(_record(fault_mechanism="bpf-cgroup,seccomp-supervisor").to_dict())
    with pytest.raises(ConfigError):
        validate_record_dict({**_record().to_dict(), "fault_mechanism": "Seccomp Supervisor"})


def test_the_attempt_reads_the_mechanisms_its_faults_recorded() -> None:
    instances = [types.SimpleNamespace(id=i) for i in ("f0", "f1", "f2", "f3")]
    attempt = types.SimpleNamespace(problem=types.SimpleNamespace(faults=instances), contexts={
        "f0": types.SimpleNamespace(state={mech.STATE_KEY: "bpf-cgroup"}),
        "f1": types.SimpleNamespace(state={}),  # a Kubernetes-API fault records none
        "f2": types.SimpleNamespace(state={mech.STATE_KEY: "seccomp-supervisor"}),
        "f3": types.SimpleNamespace(state={mech.STATE_KEY: "bpf-cgroup"})})
    assert Attempt.fault_mechanism(attempt) == "bpf-cgroup,seccomp-supervisor"
    attempt.contexts = {}
    assert Attempt.fault_mechanism(attempt) is None


def test_noop_declares_no_mechanism() -> None:
    assert all(not f.mechanisms for f in sregym_noop.plugin.sregym_faults())


def test_a_run_skips_a_problem_whose_fault_has_no_mechanism_on_the_cluster_and_says_why() -> None:
    # e.g. syscall-fail fsync on a kubeconfig cluster: its capabilities allow it (connect runs
    # there through the DaemonSet loader), the cluster's probe offers nothing for fsync
    from sregym_core.conductor.runner import mechanism_probe, plan_items
    from sregym_core.problems import unavailable_mechanisms
    from sregym_core.types import FaultInstance

    spec = FaultSpec(name="syscall-ish", impl=StateFault(), mechanisms=DECLARED)
    host = types.SimpleNamespace(get_faults=lambda: {"syscall-ish": spec})
    probe = {"bpf-cgroup": {"available": True}, "seccomp-supervisor": {"available": False, "reason": "no node agent"}}

    def problem(pid: str, **params) -> types.SimpleNamespace:
        return types.SimpleNamespace(id=pid, faults=[FaultInstance(id="f0", fault="syscall-ish", target="x",
                                                                   params=params)])
    fsync, connect = problem("p-fsync", syscall="fsync"), problem("p-connect", syscall="connect")
    assert unavailable_mechanisms(connect, host, probe) == {}
    assert "seccomp-supervisor: no node agent" in unavailable_mechanisms(fsync, host, probe)["syscall-ish"]
    assert unavailable_mechanisms(fsync, host, None) == {}  # not probed: nothing refused
    said: list[str] = []
    plan = types.SimpleNamespace(problems=[fsync, connect], agents=["a"], attempts=1)
    items = plan_items(host, plan, frozenset({"any"}), "c", said.append, probe=probe)
    assert [item.problem.id for item in items] == ["p-connect"]
    assert said and said[0].startswith("p-fsync: skipped: fault 'syscall-ish': no fault mechanism available")
    assert mechanism_probe(Probing()) == Probing.probe and mechanism_probe(object()) is None
