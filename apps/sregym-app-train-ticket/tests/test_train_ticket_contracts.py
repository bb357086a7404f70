"""The plugin contract suites: the AppSpec, the tt-flag fault and every shipped problem."""

from __future__ import annotations

import sregym_app_train_ticket.plugin
from sregym_app_train_ticket.app import app_spec

from sregym_core.testing.contracts import AppContract, FaultContract, ProblemContract


class TestTrainTicketApp(AppContract):
    plugin = sregym_app_train_ticket.plugin


class TestTrainTicketFaults(FaultContract):
    plugin = sregym_app_train_ticket.plugin
    app = app_spec()
    live_only = {"tt-flag": "waits until flagd serves the change, asking flagd itself "
                            "(tests/test_train_ticket_live.py, TestTrainTicketLiveFaults and the replicated faults)"}


class TestTrainTicketProblems(ProblemContract):
    plugin = sregym_app_train_ticket.plugin
