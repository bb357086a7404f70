"""The diagnosis-judge interface: a 9-question checklist in three dimensions.

A judge reads the agent's free-text diagnosis and the problem's structured ground truth and answers
nine yes/no questions. Each dimension scores the fraction of its questions answered "yes"; the
composite is the mean of the three dimension scores (equal weights). A diagnosis passes when the
composite reaches the threshold (0.7 unless configured) *and* no dimension scores 0, so a diagnosis
cannot pass by being excellent at localisation while saying nothing about the mechanism.

Questions are data (:data:`CHECKLIST`), so judges, prompts, reports and calibration all share them.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from sregym_core.types import GroundTruth

DEFAULT_THRESHOLD = 0.7

#: Judges read at most this much of a submission: a diagnosis is a paragraph, not a log dump, and an
#: agent must not be able to make grading slow or expensive by submitting megabytes.
MAX_SUBMISSION_CHARS = 20_000

DIMENSIONS = ("localization", "characterization", "scope")


@attrs.frozen(kw_only=True)
class ChecklistQuestion:
    """One checklist question.

    Attributes:
        id: stable identifier used in stored answers, prompts and calibration labels.
        dimension: one of :data:`DIMENSIONS`.
        question: the question as a judge reads it.
        guidance: how to answer it, including what counts as "not applicable" (answered yes).
    """

    id: str
    dimension: str
    question: str
    guidance: str


CHECKLIST: tuple[ChecklistQuestion, ...] = (
    ChecklistQuestion(
        id="loc_component",
        dimension="localization",
        question="Does the diagnosis name the faulty component(s) as the root cause?",
        guidance="Yes when at least one faulty component (of a user-visible fault, if any) is named as the cause.",
    ),
    ChecklistQuestion(
        id="loc_namespace",
        dimension="localization",
        question="Does the diagnosis place the fault in the right namespace?",
        guidance=(
            "Yes when the namespace is named, or when it is the application's only namespace and the diagnosis "
            "names the right component without pointing at another namespace."
        ),
    ),
    ChecklistQuestion(
        id="loc_kind",
        dimension="localization",
        question="Does the diagnosis identify the right kind of resource or layer (e.g. Deployment, Service, "
        "ConfigMap, database role, node)?",
        guidance="Yes when the broken resource kind, or the layer it belongs to, is identified.",
    ),
    ChecklistQuestion(
        id="char_mechanism",
        dimension="characterization",
        question="Does the diagnosis describe the right fault mechanism (what was changed or broken)?",
        guidance="Yes when the mechanism or an equivalent description is given; symptoms alone are not enough.",
    ),
    ChecklistQuestion(
        id="char_values",
        dimension="characterization",
        question="Does the diagnosis give the concrete mutated values or configuration (e.g. the wrong image "
        "tag, the wrong port, the revoked privilege)?",
        guidance="Yes when a concrete mutated value is stated. When the truth has no concrete values, answer "
        "as for the mechanism question.",
    ),
    ChecklistQuestion(
        id="char_chain",
        dimension="characterization",
        question="Does the diagnosis connect the cause to the observed symptoms correctly?",
        guidance="Yes when the right mechanism is linked to what users or operators observe.",
    ),
    ChecklistQuestion(
        id="scope_no_unrelated",
        dimension="scope",
        question="Does the diagnosis avoid blaming unrelated components?",
        guidance="No when a component that is not faulty is named as a root cause, or when the diagnosis "
        "blames most of the application's components (over-broad blame).",
    ),
    ChecklistQuestion(
        id="scope_all_faults",
        dimension="scope",
        question="Does the diagnosis name all the faulty components (for correlated or multiple faults)?",
        guidance="Yes when every faulty component is named; naming everything indiscriminately does not count.",
    ),
    ChecklistQuestion(
        id="scope_priority",
        dimension="scope",
        question="Does the diagnosis prioritise the user-visible fault over latent ones correctly?",
        guidance="With a single fault or no latent fault, yes unless the blame is over-broad. Otherwise yes "
        "when the user-visible fault is presented first or as the priority.",
    ),
)

QUESTION_IDS: tuple[str, ...] = tuple(q.id for q in CHECKLIST)
QUESTIONS_BY_ID: Mapping[str, ChecklistQuestion] = {q.id: q for q in CHECKLIST}

#: Upstream SREGym's rubric, as a selectable variant (``rubric="upstream"``) so scores can be set next
#: to published upstream numbers: the same ids and question gists, dimension weights 0.33/0.33/0.34,
#: scores rounded to 0.01, pass at composite >= 0.70 (facts: shared/research/upstream-parity.md, 3).
UPSTREAM_DIMENSIONS = ("D1", "D2", "D3")
UPSTREAM_DIMENSION_NAMES = {"D1": "Fault Localization", "D2": "Fault Characterization", "D3": "Scope Precision"}
UPSTREAM_WEIGHTS = {"D1": 0.33, "D2": 0.33, "D3": 0.34}
UPSTREAM_CHECKLIST: tuple[ChecklistQuestion, ...] = (
    ChecklistQuestion(id="D1-Q1", dimension="D1", question="Does the diagnosis name the same component as the origin of the fault?",
                      guidance="Yes when the ground truth's component is named as where the fault originates."),
    ChecklistQuestion(id="D1-Q2", dimension="D1", question="Does the diagnosis distinguish the origin from cascading failures?",
                      guidance="Yes when downstream victims are not presented as origins."),
    ChecklistQuestion(id="D1-Q3", dimension="D1", question="Does the diagnosis avoid blaming a healthy component as the origin?",
                      guidance="No when a component that is not faulty is named as the origin."),
    ChecklistQuestion(id="D2-Q1", dimension="D2", question="Does the diagnosis identify the same injected fault mechanism?",
                      guidance="Yes when the mechanism or an equivalent description is given; symptoms alone are not enough."),
    ChecklistQuestion(id="D2-Q2", dimension="D2", question="Does the diagnosis give concrete mutated details (env key, port, tag, limit)?",
                      guidance="Yes when a concrete mutated value is stated."),
    ChecklistQuestion(id="D2-Q3", dimension="D2", question="Does the diagnosis avoid asserting a wrong or unrelated fault type?",
                      guidance="No when it asserts a fault type the ground truth does not contain."),
    ChecklistQuestion(id="D3-Q1", dimension="D3", question="Does the diagnosis avoid over-attribution (blaming more than the faulty components)?",
                      guidance="No when unrelated components are blamed."),
    ChecklistQuestion(id="D3-Q2", dimension="D3", question="Does the diagnosis avoid under-attribution (missing faulty components)?",
                      guidance="No when a faulty component is missing."),
    ChecklistQuestion(id="D3-Q3", dimension="D3", question="Is the described impact consistent with the ground truth?",
                      guidance="Yes when the stated effects follow from the right mechanism."),
)
UPSTREAM_QUESTION_IDS: tuple[str, ...] = tuple(q.id for q in UPSTREAM_CHECKLIST)
RUBRICS = ("sregym", "upstream")


def checklist_for(rubric: str = "sregym") -> tuple[ChecklistQuestion, ...]:
    """The questions of a rubric: ``sregym`` (the project's) or ``upstream``."""
    if rubric == "upstream":
        return UPSTREAM_CHECKLIST
    if rubric == "sregym":
        return CHECKLIST
    from sregym_core.errors import ConfigError

    raise ConfigError(f"unknown judge rubric {rubric!r}", hints=(f"use one of {', '.join(RUBRICS)}",))


@attrs.frozen(kw_only=True)
class ChecklistAnswer:
    """A judge's answer to one checklist question.

    Attributes:
        id, dimension, question: copied from the :class:`ChecklistQuestion`.
        answer: the yes/no answer.
        evidence: why (a quote or the matching rule).
        confidence: 0..1.
    """

    id: str
    dimension: str
    question: str
    answer: bool
    evidence: str = ""
    confidence: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChecklistAnswer:
        return cls(**{k: data[k] for k in attrs.fields_dict(cls) if k in data})


@attrs.frozen(kw_only=True)
class JudgeVerdict:
    """The outcome of judging one diagnosis.

    Attributes:
        judge: the judge's name (``judge-rules``, ``judge-llm``).
        passed: composite >= threshold and no dimension at 0 (and no error).
        composite: mean of the dimension scores.
        dimensions: score per dimension, 0..1.
        answers: the nine answers, in :data:`CHECKLIST` order.
        threshold: the composite needed to pass.
        inputs: what the judge saw: submission, truth (dicts), app components and namespace.
        cost: money spent (USD), when the judge calls a paid model.
        tokens: ``{"prompt": n, "completion": n}``.
        error: set when the judge could not reach a verdict (then ``passed`` is False).
    """

    judge: str
    passed: bool
    composite: float
    dimensions: Mapping[str, float]
    answers: tuple[ChecklistAnswer, ...]
    threshold: float = DEFAULT_THRESHOLD
    inputs: Mapping[str, Any] = attrs.field(factory=dict)
    cost: float | None = None
    tokens: Mapping[str, int] = attrs.field(factory=lambda: {"prompt": 0, "completion": 0})
    error: str | None = None

    def answer(self, question_id: str) -> bool:
        """The answer to one question by id (KeyError when the verdict has no such answer)."""
        for item in self.answers:
            if item.id == question_id:
                return item.answer
        raise KeyError(question_id)

    def answers_by_id(self) -> dict[str, bool]:
        return {a.id: a.answer for a in self.answers}

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "passed": self.passed,
            "composite": self.composite,
            "dimensions": dict(self.dimensions),
            "answers": [a.to_dict() for a in self.answers],
            "threshold": self.threshold,
            "inputs": dict(self.inputs),
            "cost": self.cost,
            "tokens": dict(self.tokens),
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeVerdict:
        return cls(
            judge=data["judge"],
            passed=bool(data["passed"]),
            composite=float(data["composite"]),
            dimensions=dict(data.get("dimensions", {})),
            answers=tuple(ChecklistAnswer.from_dict(a) for a in data.get("answers", ())),
            threshold=float(data.get("threshold", DEFAULT_THRESHOLD)),
            inputs=dict(data.get("inputs", {})),
            cost=data.get("cost"),
            tokens=dict(data.get("tokens") or {"prompt": 0, "completion": 0}),
            error=data.get("error"),
        )


@runtime_checkable
class Judge(Protocol):
    """What every diagnosis judge provides (the factory of an ``OracleSpec`` of kind ``judge``)."""

    name: str
    threshold: float

    def judge(
        self,
        submission: str,
        truth: tuple[GroundTruth, ...],
        *,
        app_components: tuple[str, ...],
        app_namespace: str,
    ) -> JudgeVerdict:
        """Answer the checklist for ``submission`` against ``truth``."""
        ...


def score(answers: Iterable[ChecklistAnswer]) -> dict[str, float]:
    """Score per dimension: the fraction of its questions answered yes."""
    totals: dict[str, list[int]] = {d: [0, 0] for d in DIMENSIONS}
    for item in answers:
        bucket = totals.setdefault(item.dimension, [0, 0])
        bucket[0] += int(item.answer)
        bucket[1] += 1
    return {d: (yes / n if n else 0.0) for d, (yes, n) in totals.items()}


def decide(dimensions: Mapping[str, float], threshold: float) -> tuple[float, bool]:
    """Composite (equal weights) and pass/fail: composite >= threshold and no empty dimension."""
    values = [dimensions.get(d, 0.0) for d in DIMENSIONS]
    composite = round(sum(values) / len(values), 6)
    return composite, composite >= threshold - 1e-9 and min(values) > 0.0


def decide_upstream(answers: Iterable[ChecklistAnswer], threshold: float) -> tuple[dict[str, float], float, bool]:
    """Upstream scoring: per-dimension yes fraction rounded to 0.01, weighted 0.33/0.33/0.34, the
    composite rounded to 0.01, pass at composite >= threshold (0.70)."""
    totals: dict[str, list[int]] = {d: [0, 0] for d in UPSTREAM_DIMENSIONS}
    for item in answers:
        bucket = totals.setdefault(item.dimension, [0, 0])
        bucket[0] += int(item.answer)
        bucket[1] += 1
    dimensions = {d: round(yes / n, 2) if n else 0.0 for d, (yes, n) in totals.items()}
    composite = round(sum(UPSTREAM_WEIGHTS.get(d, 0.0) * s for d, s in dimensions.items()), 2)
    return dimensions, composite, composite >= threshold - 1e-9


def check_threshold(threshold: Any) -> float:
    """Validate a configured threshold (a number in (0, 1])."""
    from sregym_core.errors import ConfigError

    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 < float(threshold) <= 1.0:
        raise ConfigError(
            f"judge threshold must be a number in (0, 1], got {threshold!r}",
            hints=("the default is 0.7; set judge_threshold in the problem file",),
        )
    return float(threshold)


def clip_submission(submission: Any) -> tuple[str, int]:
    """The part of a submission judges read, and the original length."""
    text = submission if isinstance(submission, str) else str(submission or "")
    return text[:MAX_SUBMISSION_CHARS], len(text)


def truth_to_dict(truth: GroundTruth | Mapping[str, Any]) -> dict[str, Any]:
    """A ground truth as plain JSON data (for stored inputs and prompts)."""
    if isinstance(truth, Mapping):
        return dict(truth)
    return truth.to_dict()


def coerce_truth(truth: GroundTruth | Mapping[str, Any] | Sequence[Any]) -> tuple[GroundTruth, ...]:
    """Accept one truth or several, as records or dicts; return records.

    :raises OracleError: when there is no truth or a dict is not a ground truth.
    """
    from sregym_core.errors import OracleError

    if isinstance(truth, GroundTruth | Mapping):
        truth = (truth,)
    records = []
    for item in truth or ():
        if isinstance(item, GroundTruth):
            records.append(item)
            continue
        try:
            records.append(GroundTruth.from_config(item))
        except (TypeError, ValueError, AttributeError) as exc:
            raise OracleError(
                f"cannot judge: invalid ground truth ({exc})",
                hints=("a ground truth needs fault, layer, components, namespace, resource_kind and mechanism",),
            ) from None
    if not records:
        raise OracleError("cannot judge a diagnosis without a ground truth", hints=("the problem defines no ground truth",))
    return tuple(records)


def make_verdict(
    *,
    judge: str,
    answers: Sequence[ChecklistAnswer],
    threshold: float,
    submission: str,
    truth: Sequence[GroundTruth],
    app_components: Sequence[str],
    app_namespace: str,
    cost: float | None = None,
    tokens: Mapping[str, int] | None = None,
    error: str | None = None,
    submitted_chars: int | None = None,
    rubric: str = "sregym",
) -> JudgeVerdict:
    """Score ``answers`` (by the rubric's rule) and wrap everything a verdict stores."""
    if rubric == "upstream":
        dimensions, composite, passed = decide_upstream(answers, threshold)
    else:
        dimensions = score(answers)
        composite, passed = decide(dimensions, threshold)
    inputs: dict[str, Any] = {
        "submission": submission,
        "truth": [truth_to_dict(t) for t in truth],
        "app_components": list(app_components),
        "app_namespace": app_namespace,
    }
    if submitted_chars is not None and submitted_chars > len(submission):
        inputs["submitted_chars"] = submitted_chars  # the judge read only the first MAX_SUBMISSION_CHARS
    if rubric != "sregym":
        inputs["rubric"] = rubric
    return JudgeVerdict(
        judge=judge,
        passed=passed and error is None,
        composite=composite,
        dimensions=dimensions,
        answers=tuple(answers),
        threshold=threshold,
        inputs=inputs,
        cost=cost,
        tokens=dict(tokens or {"prompt": 0, "completion": 0}),
        error=error,
    )


def failed_verdict(
    *,
    judge: str,
    error: str,
    threshold: float,
    submission: str,
    truth: Sequence[GroundTruth],
    app_components: Sequence[str],
    app_namespace: str,
    cost: float | None = None,
    tokens: Mapping[str, int] | None = None,
    submitted_chars: int | None = None,
    rubric: str = "sregym",
) -> JudgeVerdict:
    """A verdict for a judge that could not answer: every question "no", ``error`` set."""
    answers = [
        ChecklistAnswer(id=q.id, dimension=q.dimension, question=q.question, answer=False, evidence=error, confidence=0.0)
        for q in checklist_for(rubric)
    ]
    return make_verdict(
        judge=judge,
        answers=answers,
        threshold=threshold,
        submission=submission,
        truth=truth,
        app_components=app_components,
        app_namespace=app_namespace,
        cost=cost,
        tokens=tokens,
        error=error,
        submitted_chars=submitted_chars,
        rubric=rubric,
    )
