"""Judge calibration: Cohen's kappa between judges and against human labels.

The package ships ``data/calibration.jsonl``: realistic ground truths of Hotel Reservation faults,
each with several diagnoses (correct, and subtly wrong: wrong component, right component but wrong
mechanism, over-broad blame, vague), every diagnosis labelled by hand on each of the nine checklist
questions. :func:`calibrate` runs judges over it and reports agreement per question, pooled over
all questions, and on the final pass/fail verdict.

Kappa corrects raw agreement for chance: ``(p_o - p_e) / (1 - p_e)``. When both raters give one
answer to every item (``p_e == 1``) kappa is undefined and reported as ``None``; raw agreement is
always reported next to it.

.. versionadded:: 0.1
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from sregym_core.errors import ConfigError
from sregym_core.oracles.judge import DEFAULT_THRESHOLD, QUESTION_IDS, ChecklistAnswer, Judge, decide, score
from sregym_core.oracles.judge import QUESTIONS_BY_ID as _QUESTIONS
from sregym_core.types import GroundTruth

LABELS = "labels"


@attrs.frozen(kw_only=True)
class CalibrationItem:
    """One labelled diagnosis."""

    id: str
    category: str
    truth: tuple[GroundTruth, ...]
    app_components: tuple[str, ...]
    app_namespace: str
    submission: str
    labels: Mapping[str, bool]

    @property
    def label_passed(self) -> bool:
        answers = [
            ChecklistAnswer(id=q, dimension=_QUESTIONS[q].dimension, question=_QUESTIONS[q].question, answer=self.labels[q])
            for q in QUESTION_IDS
        ]
        return decide(score(answers), DEFAULT_THRESHOLD)[1]


def default_dataset_path() -> Path:
    return Path(str(resources.files("sregym_judge_llm") / "data" / "calibration.jsonl"))


def load_dataset(path: str | os.PathLike[str] | None = None) -> list[CalibrationItem]:
    """Read a calibration set (JSON Lines). Each line: ``id``, ``category``, ``truth`` (list of
    ground-truth dicts), ``app_components``, ``app_namespace``, ``submission``, ``labels``
    (question id -> bool for all nine)."""
    path = Path(path) if path else default_dataset_path()
    if not path.exists():
        raise ConfigError(f"calibration set {path} does not exist")
    items: list[CalibrationItem] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
            labels = {q: data["labels"][q] for q in QUESTION_IDS}
            if not all(isinstance(v, bool) for v in labels.values()):
                raise ValueError("labels must be true or false")
            item = CalibrationItem(
                id=str(data["id"]),
                category=str(data.get("category", "")),
                truth=tuple(GroundTruth.from_config(t) for t in data["truth"]),
                app_components=tuple(data.get("app_components", ())),
                app_namespace=str(data.get("app_namespace", "")),
                submission=str(data["submission"]),
                labels=labels,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"bad calibration item at {where}", errors=[(where, f"{type(exc).__name__}: {exc}")]) from None
        if item.id in seen:
            raise ConfigError(f"duplicate calibration item id {item.id!r} at {where}")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise ConfigError(f"calibration set {path} is empty")
    return items


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two raters' yes/no answers over the same items (``None`` when undefined)."""
    if len(a) != len(b):
        raise ValueError("both raters must rate the same items")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    yes_a, yes_b = sum(a) / n, sum(b) / n
    expected = yes_a * yes_b + (1 - yes_a) * (1 - yes_b)
    if expected >= 1.0:
        return None
    return round((observed - expected) / (1 - expected), 4)


def agreement(a: Sequence[bool], b: Sequence[bool]) -> float:
    return round(sum(x == y for x, y in zip(a, b, strict=True)) / len(a), 4) if a else 0.0


@attrs.frozen(kw_only=True)
class Agreement:
    """Agreement of two raters: per question, pooled over all questions, and on pass/fail."""

    raters: tuple[str, str]
    per_question: Mapping[str, tuple[float | None, float]]  # question -> (kappa, raw agreement)
    overall: tuple[float | None, float]
    verdict: tuple[float | None, float]
    items: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "raters": list(self.raters),
            "items": self.items,
            "per_question": {q: {"kappa": k, "agreement": p} for q, (k, p) in self.per_question.items()},
            "overall": {"kappa": self.overall[0], "agreement": self.overall[1]},
            "verdict": {"kappa": self.verdict[0], "agreement": self.verdict[1]},
        }


def compare(
    name_a: str, answers_a: Sequence[Mapping[str, bool]], passed_a: Sequence[bool],
    name_b: str, answers_b: Sequence[Mapping[str, bool]], passed_b: Sequence[bool],
) -> Agreement:
    per_question = {}
    pooled_a: list[bool] = []
    pooled_b: list[bool] = []
    for q in QUESTION_IDS:
        xs = [bool(x[q]) for x in answers_a]
        ys = [bool(y[q]) for y in answers_b]
        per_question[q] = (cohen_kappa(xs, ys), agreement(xs, ys))
        pooled_a += xs
        pooled_b += ys
    return Agreement(
        raters=(name_a, name_b),
        per_question=per_question,
        overall=(cohen_kappa(pooled_a, pooled_b), agreement(pooled_a, pooled_b)),
        verdict=(cohen_kappa(list(passed_a), list(passed_b)), agreement(list(passed_a), list(passed_b))),
        items=len(answers_a),
    )


@attrs.frozen(kw_only=True)
class CalibrationReport:
    """What :func:`calibrate` found."""

    dataset: str
    items: int
    categories: Mapping[str, int]
    vs_labels: tuple[Agreement, ...]
    between_judges: tuple[Agreement, ...]
    judge_errors: Mapping[str, int]
    cost: Mapping[str, float | None]
    disagreements: Mapping[str, tuple[str, ...]]  # judge -> ids whose pass/fail differs from the label

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "items": self.items,
            "categories": dict(self.categories),
            "vs_labels": [a.to_dict() for a in self.vs_labels],
            "between_judges": [a.to_dict() for a in self.between_judges],
            "judge_errors": dict(self.judge_errors),
            "cost": dict(self.cost),
            "disagreements": {k: list(v) for k, v in self.disagreements.items()},
        }

    def format(self) -> str:
        """The printable report: one kappa table per comparison."""
        out = [f"calibration set: {self.dataset} ({self.items} diagnoses: "
               + ", ".join(f"{n} {c}" for c, n in sorted(self.categories.items())) + ")"]
        for judge, errors in self.judge_errors.items():
            if errors:
                out.append(f"warning: {judge} could not judge {errors} diagnoses (counted as all-no)")
        for comparison in (*self.vs_labels, *self.between_judges):
            out.append("")
            out.append(f"{comparison.raters[0]} vs {comparison.raters[1]}:")
            out.append(f"  {'question':<20} {'kappa':>7} {'agree':>7}")
            for q, (kappa, raw) in comparison.per_question.items():
                out.append(f"  {q:<20} {_k(kappa):>7} {raw * 100:>6.1f}%")
            out.append(f"  {'all questions':<20} {_k(comparison.overall[0]):>7} {comparison.overall[1] * 100:>6.1f}%")
            out.append(f"  {'pass/fail':<20} {_k(comparison.verdict[0]):>7} {comparison.verdict[1] * 100:>6.1f}%")
        for judge, ids in self.disagreements.items():
            if ids:
                out.append("")
                out.append(f"{judge} pass/fail differs from the label on: {', '.join(ids)}")
        for judge, cost in self.cost.items():
            if cost:
                out.append(f"{judge} cost: ${cost:.4f}")
        return "\n".join(out)


def _k(kappa: float | None) -> str:
    return "n/a" if kappa is None else f"{kappa:.3f}"


JudgeFactory = Callable[[str], Judge]


def resolve_judge(name: str, options: Mapping[str, Any] | None = None) -> Judge:
    """A judge by name: ``judge-rules``, ``judge-llm`` (with ``options``), or any judge a plugin
    registered through ``sregym_oracles``."""
    options = dict(options or {})
    if name == "judge-rules":
        from sregym_core.oracles.rules import make_rules_judge

        return make_rules_judge(**{k: v for k, v in options.items() if k == "threshold"})
    if name == "judge-llm":
        from .judge import make_llm_judge

        return make_llm_judge(**options)
    from sregym_core.plugins import get_plugin_manager

    specs = {n: s for n, s in get_plugin_manager().get_oracles().items() if s.kind == "judge"}
    if name not in specs:
        raise ConfigError(f"unknown judge {name!r}", hints=(f"known judges: {', '.join(sorted(specs) or ['judge-rules'])}",))
    return specs[name].factory(**options)


def calibrate(
    judges: Sequence[str | Judge],
    dataset: str | os.PathLike[str] | Iterable[CalibrationItem] | None = None,
    *,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> CalibrationReport:
    """Run ``judges`` (names or judge objects; one or two) over a labelled set.

    :param judges: e.g. ``["judge-llm", "judge-rules"]``.
    :param dataset: a JSONL path or loaded items; default the shipped set.
    :param options: per judge name, factory options (``{"judge-llm": {"model": ...}}``).
    :param progress: called as ``progress(judge, done, total)``.
    :returns: kappa of every judge against the labels and, with two judges, between them.
    """
    if not judges:
        raise ConfigError("calibrate needs at least one judge", hints=("e.g. --judge judge-rules",))
    if dataset is None or isinstance(dataset, str | os.PathLike):
        label = str(dataset or default_dataset_path())
        items = load_dataset(dataset)
    else:
        items = list(dataset)
        label = "(items)"
    instances = [resolve_judge(j, (options or {}).get(j)) if isinstance(j, str) else j for j in judges]
    names = [getattr(j, "name", f"judge-{i}") for i, j in enumerate(instances)]
    if len(set(names)) != len(names):  # the same judge twice (e.g. two models): number them
        names = [f"{n}#{i + 1}" for i, n in enumerate(names)]
    results: dict[str, tuple[list[dict[str, bool]], list[bool]]] = {}
    errors: dict[str, int] = {}
    cost: dict[str, float | None] = {}
    for name, judge in zip(names, instances, strict=True):
        answers, passed, errors[name], spent = [], [], 0, None
        for done, item in enumerate(items, 1):
            verdict = judge.judge(item.submission, item.truth, app_components=item.app_components, app_namespace=item.app_namespace)
            answers.append(verdict.answers_by_id())
            passed.append(verdict.passed)
            errors[name] += verdict.error is not None
            if verdict.cost is not None:
                spent = (spent or 0.0) + verdict.cost
            if progress:
                progress(name, done, len(items))
        results[name] = (answers, passed)
        cost[name] = spent
    label_answers = [dict(i.labels) for i in items]
    label_passed = [i.label_passed for i in items]
    vs_labels = tuple(compare(n, *results[n], "labels", label_answers, label_passed) for n in names)
    between = ()
    if len(names) >= 2:
        between = tuple(
            compare(a, *results[a], b, *results[b]) for i, a in enumerate(names) for b in names[i + 1 :]
        )
    categories: dict[str, int] = {}
    for item in items:
        categories[item.category] = categories.get(item.category, 0) + 1
    disagreements = {
        n: tuple(i.id for i, p in zip(items, results[n][1], strict=True) if p != i.label_passed) for n in names
    }
    return CalibrationReport(
        dataset=label,
        items=len(items),
        categories=categories,
        vs_labels=vs_labels,
        between_judges=between,
        judge_errors=errors,
        cost=cost,
        disagreements=disagreements,
    )
