"""One record per attempt: what happened, how it was graded, what it cost.

.. versionadded:: 0.1
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

import attrs

SCHEMA_VERSION = 1

#: How the agent's process ended: normally, by crashing, by running out of time, or by sending
#: something that is not a submission.
AGENT_STATUSES = ("ok", "crashed", "timeout", "garbage")

#: Stages whose time limit can expire.
STAGES = ("setup", "diagnosis", "mitigation", "tearing_down")


def utc_now() -> str:
    """Now, as an ISO-8601 UTC timestamp with milliseconds (what records store)."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _plain(value: Any) -> Any:
    """Verdict records (attrs objects with ``to_dict``) become their dicts."""
    if value is None or isinstance(value, Mapping):
        return None if value is None else dict(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise TypeError(f"expected a verdict or a dict, got {type(value).__name__}")


def attempt_key(problem_id: str, agent: str, attempt: int, model: str | None = None) -> tuple[str, str, str, int]:
    """One attempt's identity: (problem id, agent, model or "", attempt number). The model is part
    of it so that runs of one agent with several models can share a results directory (and
    ``--resume`` one model's run without skipping another's attempts)."""
    return (problem_id, agent, model or "", attempt)


@attrs.frozen(kw_only=True)
class AttemptRecord:
    """The result of one attempt of one agent at one problem.

    Attributes:
        run_id: the ``sregym run`` invocation this attempt belongs to.
        problem_id, agent, attempt: what was attempted (``attempt`` counts from 1).
        upstream_id: the upstream SREGym id the problem was run as (``--problem <upstream id>``,
            ``--suite sregym-lite``); ``None`` when it was run by our id. ``problem_id`` stays
            ours either way, so ``--resume`` matches a run whichever id started it.
        app: the application's name; ``model``: the agent's model, when it has one.
        started_at, finished_at: ISO-8601 UTC timestamps.
        diagnosis_passed: the judge's verdict; ``None`` when no diagnosis was submitted.
        diagnosis: the judge's verdict as a dict (``JudgeVerdict.to_dict()``) with its evidence.
        mitigation_passed, mitigation: the same for the mitigation oracle (``OracleVerdict.to_dict()``).
        success: end-to-end success (diagnosis and mitigation passed), computed unless given.
        stages: the graded stages the attempt ran (``diagnosis``, ``mitigation`` or both).
        time_to_diagnose_s, time_to_mitigate_s: seconds from the end of the fault injection (the
            moment the last initial fault finished injecting, just before the agent is started) to
            the acceptance of each stage's submission.
        diagnosis_graded_s, mitigation_graded_s: seconds from the same point to the end of each
            stage's grading (the judge, the mitigation oracle): upstream SREGym's ``TTL``/``TTM``.
        agent_timeout_s: the agent's time limit.
        steps: agent steps (tool calls / turns); ``prompt_tokens``, ``completion_tokens``, ``cost_usd``.
        agent_status: one of :data:`AGENT_STATUSES`.
        timeouts: stages whose time limit expired.
        deploy_failed: the app could not be deployed (the attempt did not run);
            ``deploy_attempts``: how many deploys were tried.
        error: what went wrong, in one message.
        fault_mechanism: the real machinery the faults ran by, as they recorded it
            (``sregym_core.mechanisms`` names, e.g. ``seccomp-supervisor``; several comma-joined in
            problem order); ``None`` for faults that act through the Kubernetes API alone.
        trajectory_path: the ATIF trajectory file, relative to the results directory.
        extra: anything else (judge name, oracle composition, fault instances...).
    """

    run_id: str
    problem_id: str
    agent: str
    attempt: int = attrs.field(converter=int)
    upstream_id: str | None = attrs.field(default=None, converter=lambda v: v or None)
    app: str = ""
    model: str | None = None
    started_at: str = attrs.field(factory=utc_now)
    finished_at: str | None = None
    diagnosis_passed: bool | None = None
    diagnosis: Mapping[str, Any] | None = attrs.field(default=None, converter=_plain)
    mitigation_passed: bool | None = None
    mitigation: Mapping[str, Any] | None = attrs.field(default=None, converter=_plain)
    success: bool = attrs.field(
        default=attrs.Factory(lambda self: bool(self.diagnosis_passed and self.mitigation_passed), takes_self=True)
    )
    stages: tuple[str, ...] = attrs.field(default=("diagnosis", "mitigation"), converter=tuple)
    time_to_diagnose_s: float | None = attrs.field(default=None, converter=_optional_float)
    time_to_mitigate_s: float | None = attrs.field(default=None, converter=_optional_float)
    diagnosis_graded_s: float | None = attrs.field(default=None, converter=_optional_float)
    mitigation_graded_s: float | None = attrs.field(default=None, converter=_optional_float)
    agent_timeout_s: float | None = attrs.field(default=None, converter=_optional_float)
    steps: int | None = attrs.field(default=None, converter=_optional_int)
    prompt_tokens: int | None = attrs.field(default=None, converter=_optional_int)
    completion_tokens: int | None = attrs.field(default=None, converter=_optional_int)
    cost_usd: float | None = attrs.field(default=None, converter=_optional_float)
    agent_status: str = attrs.field(default="ok", validator=attrs.validators.in_(AGENT_STATUSES))
    timeouts: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    deploy_failed: bool = False
    deploy_attempts: int = 1
    error: str | None = None
    fault_mechanism: str | None = attrs.field(default=None, converter=lambda v: v or None)
    trajectory_path: str | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    schema_version: int = SCHEMA_VERSION

    @attempt.validator
    def _check_attempt(self, _attribute: Any, value: int) -> None:
        if value < 1:
            raise ValueError(f"attempt counts from 1, got {value}")

    @property
    def key(self) -> tuple[str, str, str, int]:
        """What ``--resume`` and the reports compare: see :func:`attempt_key`."""
        return attempt_key(self.problem_id, self.agent, self.attempt, self.model)

    def to_dict(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=False)
        data["timeouts"] = list(self.timeouts)
        data["stages"] = list(self.stages)
        data["diagnosis"] = None if self.diagnosis is None else dict(self.diagnosis)
        data["mitigation"] = None if self.mitigation is None else dict(self.mitigation)
        data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttemptRecord:
        fields = attrs.fields_dict(cls)
        return cls(**{k: v for k, v in data.items() if k in fields})


#: what makes a spreadsheet read a cell as a formula (OWASP's "CSV injection" list)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` for a CSV cell: a text an agent wrote (its diagnosis, an error) that a spreadsheet would run
    as a formula (``=HYPERLINK(...)``, red-team round 9) gets a leading apostrophe, which spreadsheets show as
    text; numbers, and texts that are numbers, stay as they are."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_STARTS):
        return value
    try:
        float(value)
        return value
    except ValueError:
        return "'" + value
