"""Judge calibration: how often judges agree with careful human labels.

Two kinds of labelled sets ship with the package:

* ``data/labelled.yaml`` (the default): 224 hand-written diagnoses of 17 curated Hotel Reservation
  problems, each labelled pass/fail as a careful SRE grader would, in categories (correct concise,
  correct plain English, correct at the end of an investigation log, wrong component, wrong
  mechanism, symptom only, kitchen sink, hedge, pasted output, prompt injection, a universal text).
* ``data/labelled-holdout.yaml`` (72, Hotel, written after the rules) and ``data/labelled-apps.yaml``
  (180 diagnoses of 18 Astronomy Shop, Social Network and TrainTicket problems, same categories).
* ``data/calibration.jsonl`` and ``calibration-holdout.jsonl``: diagnoses labelled on each of the nine
  checklist questions.

:func:`calibrate` runs judges over a set and reports the pass/fail confusion matrix, false-pass and
false-fail rates (overall and per category) and Cohen's kappa against the labels; with per-question
labels, kappa per question too; with two judges, their agreement.

Kappa corrects raw agreement for chance: ``(p_o - p_e) / (1 - p_e)``. When both raters give one
answer to every item (``p_e == 1``) kappa is undefined and reported as ``None``.

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
    labels: Mapping[str, bool] | None = None  # per checklist question, when the set has them
    label: bool | None = None  # the pass/fail label, when the set labels verdicts
    problem: str = ""
    author: str = ""
    app: str = ""  # the app of the problem (sets over several apps report per app)
    voice: str = ""  # how it is written (blind sets: terse on-call, LLM report, non-native, ...)

    @property
    def label_passed(self) -> bool:
        if self.label is not None:
            return self.label
        assert self.labels is not None
        answers = [
            ChecklistAnswer(id=q, dimension=_QUESTIONS[q].dimension, question=_QUESTIONS[q].question, answer=self.labels[q])
            for q in QUESTION_IDS
        ]
        return decide(score(answers), DEFAULT_THRESHOLD)[1]


def data_path(name: str) -> Path:
    return Path(str(resources.files("sregym_judge_rules") / "data" / name))


def default_dataset_path() -> Path:
    """The per-question set (``calibration.jsonl``)."""
    return data_path("calibration.jsonl")


def labelled_set_path() -> Path:
    """The default set: hand-written diagnoses labelled pass/fail (``labelled.yaml``)."""
    return data_path("labelled.yaml")


HOTEL_COMPONENTS = (
    "frontend", "search", "geo", "rate", "profile", "recommendation", "user", "reservation",
    "postgres-geo", "postgres-rate", "postgres-profile", "postgres-recommendation", "postgres-user",
    "postgres-reservation", "memcached-rate", "memcached-profile", "memcached-reservation",
)


def load_dataset(path: str | os.PathLike[str] | None = None, *, host: Any = None, truth: str = "run") -> list[CalibrationItem]:
    """Read a calibration set: ``.yaml`` (problems, shared texts, items labelled pass/fail; see
    ``data/labelled.yaml``) or JSON Lines (each line: ``id``, ``category``, ``truth`` (list of
    ground-truth dicts), ``app_components``, ``app_namespace``, ``submission``, ``labels``
    (question id -> bool for all nine))."""
    path = Path(path) if path else labelled_set_path()
    if not path.exists():
        raise ConfigError(f"calibration set {path} does not exist")
    if path.suffix in (".yaml", ".yml"):
        return _load_labelled_yaml(path)
    if is_blind_set(path):
        return load_blind_set(path, host=host, truth=truth)
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


def _load_labelled_yaml(path: Path) -> list[CalibrationItem]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"calibration set {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("problems"), dict):
        raise ConfigError(f"calibration set {path} needs a 'problems' mapping and 'items'")
    # ``components``: the app's component names, or (a set over several apps) app -> names, with
    # each problem naming its ``app``; a shared text with an ``app`` is asked of that app's problems only.
    declared = data.get("components") or HOTEL_COMPONENTS
    truths: dict[str, tuple[GroundTruth, ...]] = {}
    apps: dict[str, str] = {}
    problem_components: dict[str, tuple[str, ...]] = {}
    for problem, entry in data["problems"].items():
        where = f"{path}: problems.{problem}.truth"
        try:
            truths[problem] = tuple(GroundTruth.from_config(t) for t in entry["truth"])
            apps[problem] = str(entry.get("app") or data.get("app") or "")
            if isinstance(declared, dict):
                problem_components[problem] = tuple(declared[apps[problem]])
            else:
                problem_components[problem] = tuple(declared)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"bad ground truth at {where}", errors=[(where, f"{type(exc).__name__}: {exc}")]) from None
    raw: list[tuple[str, dict]] = []
    for index, entry in enumerate(data.get("items") or ()):
        raw.append((f"items[{index}]", entry))
    for index, entry in enumerate(data.get("shared") or ()):  # asked of every problem (of its app, if it names one)
        raw += [(f"shared[{index}]", {**entry, "problem": problem}) for problem in truths
                if not entry.get("app") or entry.get("app") == apps[problem]]
    items: list[CalibrationItem] = []
    counters: dict[str, int] = {}
    for where, entry in raw:
        where = f"{path}: {where}"
        try:
            problem, label = entry["problem"], entry["label"]
            if problem not in truths:
                raise ValueError(f"unknown problem {problem!r}")
            if label not in ("pass", "fail"):
                raise ValueError(f"label must be pass or fail, got {label!r}")
            category = str(entry["category"])
            number = counters[f"{problem}/{category}"] = counters.get(f"{problem}/{category}", 0) + 1
            items.append(CalibrationItem(
                id=f"{problem}/{category}/{number}", category=category, truth=truths[problem],
                app_components=problem_components[problem], app_namespace=truths[problem][0].namespace,
                submission=str(entry["text"]), label=label == "pass", problem=problem,
                author=str(entry.get("author", "")), app=apps[problem],
            ))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"bad calibration item at {where}", errors=[(where, f"{type(exc).__name__}: {exc}")]) from None
    if not items:
        raise ConfigError(f"calibration set {path} is empty")
    return items


# ------------------------------------------------------------------------------------------------
# blind sets: diagnoses of curated problems, written without the judge's rules
# ------------------------------------------------------------------------------------------------

BLIND_KEYS = ("id", "problem_id", "label", "diagnosis")


def is_blind_set(path: str | os.PathLike[str]) -> bool:
    """Is this JSON Lines file a blind set (each line names a curated ``problem_id`` and a ``diagnosis``)?"""
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                first = json.loads(line)
            except ValueError:
                return False
            return isinstance(first, dict) and "problem_id" in first and "diagnosis" in first
    return False


def load_blind_set(path: str | os.PathLike[str], *, host: Any = None, truth: str = "run") -> list[CalibrationItem]:
    """Read a blind set: JSON Lines, each ``{"id", "problem_id", "voice", "category", "label":
    "pass"|"fail", "diagnosis", "why"}``. The ground truth of each curated problem is derived from the
    installed fault specs, as a run derives it (``truth``: see :func:`curated_truths`; no cluster)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"calibration set {path} does not exist")
    rows: list[tuple[str, dict]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError("each line must be a JSON object")
            missing = [k for k in BLIND_KEYS if k not in data]
            if missing:
                raise ValueError(f"missing {', '.join(missing)}")
            if data["label"] not in ("pass", "fail"):
                raise ValueError(f"label must be pass or fail, got {data['label']!r}")
        except ValueError as exc:
            raise ConfigError(f"bad blind item at {where}", errors=[(where, str(exc))],
                              hints=('each line: {"id", "problem_id", "voice", "category", "label": "pass"|"fail", '
                                     '"diagnosis", "why"}',)) from None
        rows.append((where, data))
    if not rows:
        raise ConfigError(f"calibration set {path} is empty")
    problems = curated_truths({str(d["problem_id"]) for _w, d in rows}, host=host, truth=truth)
    items: list[CalibrationItem] = []
    seen: set[str] = set()
    for where, data in rows:
        pid, item_id = str(data["problem_id"]), str(data["id"])
        if pid not in problems:
            raise ConfigError(f"bad blind item at {where}: unknown problem {pid!r}",
                              hints=("sregym problems list shows the curated problems",))
        if item_id in seen:
            raise ConfigError(f"duplicate calibration item id {item_id!r} at {where}")
        seen.add(item_id)
        app, components, namespace, truths = problems[pid]
        items.append(CalibrationItem(
            id=item_id, category=str(data.get("category") or "-"), truth=truths, app_components=components,
            app_namespace=namespace, submission=str(data["diagnosis"]), label=data["label"] == "pass", problem=pid,
            app=app, voice=str(data.get("voice") or "-"),
        ))
    return items


def _host_of_installed_plugins(host: Any) -> Any:
    """``host`` (the plugin host a caller hands over, a ``sregym_core.catalog.Catalog``), else a host
    of the installed plugins built here: calibration never reaches for a process-wide host."""
    if host is not None:
        return host
    from sregym_core.plugins import new_plugin_host

    return new_plugin_host()


def curated_truths(problem_ids: Iterable[str], *, host: Any = None, truth: str = "run",
                   ) -> dict[str, tuple[str, tuple[str, ...], str, tuple[GroundTruth, ...]]]:
    """Per curated problem id: (app, the app's component names, its namespace, the ground truths),
    from the problems and faults of ``host`` (default: the installed plugins).

    ``truth="run"`` (the default) derives each truth as a run does, after injection: the problem's
    faults are injected in order into the objects the app's deploy applies (its offline render, held by
    a recording kubectl; nothing runs), so a value a fault picks from the live object (the port it moved,
    the image tag it set, the replicas it had) is in the truth as it is in a run's. A fault that cannot
    be previewed that way (it acts inside a process, or needs a node hook) gets the truth it declares
    before injection, which is all ``truth="detached"`` gives every fault (the figures before
    2026-12-01: values a fault reads from the cluster are missing, so a diagnosis can neither be
    credited nor faulted for them)."""
    from sregym_core.faults import FaultContext
    from sregym_core.problems import derive_ground_truth, resolve_problem
    from sregym_core.types import Target

    if truth not in ("run", "detached"):
        raise ConfigError(f"unknown truth {truth!r}", hints=("run (as a run derives it) or detached",))
    host = _host_of_installed_plugins(host)
    installed = host.get_problems()
    faults, apps = host.get_faults(), host.get_apps()
    out = {}
    for pid in sorted(set(problem_ids)):
        if pid not in installed:
            continue
        problem = resolve_problem(installed[pid], host)
        app = apps[problem.app]
        previewed = _previewed_contexts(problem, app, faults) if truth == "run" else {}
        truths = tuple(
            derive_ground_truth(faults[i.fault], previewed.get(i.id) or FaultContext.detached(app),
                                Target(app=app, component=app.component(i.target), namespace=app.namespace), i)
            for i in problem.faults if i.role != "trigger"
        )
        out[pid] = (problem.app, tuple(c.name for c in app.components), app.namespace, truths)
    return out


#: each app's rendered objects, by (app name, its render function): a test's host may hold another app of the same
#: name (the seeded context copies them, so they are never changed)
_RENDERED: dict[tuple[str, Any], list[dict] | None] = {}


def _previewed_contexts(problem: Any, app: Any, faults: Mapping[str, Any]) -> dict[str, Any]:
    """Per fault instance id, the context its injection left (its ``state``), each injected in the
    problem's order into one recording cluster seeded with the app's rendered objects; an instance
    whose injection cannot run there is left out (and so is every later one: they would see a cluster
    the run would not have)."""
    import asyncio

    from sregym_core.faults import call_fault
    from sregym_core.testing.recording import RecordingFaultContext, rendered_objects
    from sregym_core.types import Target

    key = (app.name, app.render)
    if key not in _RENDERED:  # rendering an app takes ~0.5 s; a set names each app's problems many times
        _RENDERED[key] = rendered_objects(app)
    objects = _RENDERED[key]
    if objects is None:
        return {}
    cluster = RecordingFaultContext.seeded(app, objects)
    contexts: dict[str, Any] = {}
    for instance in problem.faults:
        ctx = cluster.child()
        target = Target(app=app, component=app.component(instance.target), namespace=app.namespace)
        try:
            asyncio.run(call_fault(faults[instance.fault].impl.inject, ctx, target, dict(instance.params), retry_for=0))
        except Exception:  # noqa: BLE001 - any fault that cannot be previewed keeps its declared truth
            break
        contexts[instance.id] = ctx
    return contexts


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
class VerdictStats:
    """Pass/fail of one judge against the labels: confusion matrix, error rates, per category."""

    judge: str
    true_pass: int
    false_pass: int
    true_fail: int
    false_fail: int
    kappa: float | None
    per_category: Mapping[str, Mapping[str, int]]  # category -> items, labelled_pass, false_pass, false_fail
    per_app: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)  # same counts per app (when known)
    per_voice: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)  # same counts per voice (blind sets)

    @property
    def false_pass_rate(self) -> float:
        fails = self.false_pass + self.true_fail
        return self.false_pass / fails if fails else 0.0

    @property
    def false_fail_rate(self) -> float:
        passes = self.true_pass + self.false_fail
        return self.false_fail / passes if passes else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "confusion": {"true_pass": self.true_pass, "false_pass": self.false_pass,
                          "true_fail": self.true_fail, "false_fail": self.false_fail},
            "false_pass_rate": round(self.false_pass_rate, 4),
            "false_fail_rate": round(self.false_fail_rate, 4),
            "kappa": self.kappa,
            "per_category": {c: dict(v) for c, v in self.per_category.items()},
            "per_app": {c: dict(v) for c, v in self.per_app.items()},
            "per_voice": {c: dict(v) for c, v in self.per_voice.items()},
        }

    def format(self) -> str:
        out = [
            f"{self.judge} vs labels (pass/fail):",
            f"  {'':<14}{'labelled pass':>15}{'labelled fail':>15}",
            f"  {'judged pass':<14}{self.true_pass:>15}{self.false_pass:>15}",
            f"  {'judged fail':<14}{self.false_fail:>15}{self.true_fail:>15}",
            f"  false-pass rate {self.false_pass_rate * 100:.1f}%   false-fail rate {self.false_fail_rate * 100:.1f}%"
            f"   Cohen's kappa {_k(self.kappa)}",
        ]
        for title, table in (("category", self.per_category), ("app", self.per_app), ("voice", self.per_voice)):
            if not table:
                continue
            out.append(f"  {title:<26} {'items':>5} {'false pass':>11} {'false fail':>11} {'kappa':>7}")
            for name, row in sorted(table.items()):
                passes = row["labelled_pass"]
                fails = row["items"] - passes
                fp = f"{row['false_pass']}/{fails}" if fails else "-"
                ff = f"{row['false_fail']}/{passes}" if passes else "-"
                kappa = _group_kappa(row)
                out.append(f"  {name or '-':<26} {row['items']:>5} {fp:>11} {ff:>11} {_k(kappa):>7}")
        return "\n".join(out)


def _group_kappa(row: Mapping[str, int]) -> float | None:
    """Kappa of one group from its counts (judged vs labelled pass)."""
    n, labelled = row["items"], row["labelled_pass"]
    judged = labelled - row["false_fail"] + row["false_pass"]
    agree = n - row["false_pass"] - row["false_fail"]
    return _kappa_from_counts(n, agree, labelled, judged)


def _kappa_from_counts(n: int, agree: int, labelled_pass: int, judged_pass: int) -> float | None:
    if not n:
        return None
    expected = (labelled_pass / n) * (judged_pass / n) + (1 - labelled_pass / n) * (1 - judged_pass / n)
    if expected >= 1.0:
        return None
    return round((agree / n - expected) / (1 - expected), 4) + 0.0  # no "-0.0"


def verdict_stats(judge: str, items: Sequence[CalibrationItem], passed: Sequence[bool]) -> VerdictStats:
    counts = {"tp": 0, "fp": 0, "tn": 0, "fn": 0}
    groups: dict[str, dict[str, dict[str, int]]] = {"category": {}, "app": {}, "voice": {}}
    for item, verdict in zip(items, passed, strict=True):
        label = item.label_passed
        for kind, key in (("category", item.category), ("app", item.app), ("voice", item.voice)):
            row = groups[kind].setdefault(key, {"items": 0, "labelled_pass": 0, "false_pass": 0, "false_fail": 0})
            row["items"] += 1
            row["labelled_pass"] += label
            row["false_pass"] += verdict and not label
            row["false_fail"] += label and not verdict
        counts[("t" if verdict == label else "f") + ("p" if verdict else "n")] += 1
    # a set that does not know apps or voices (every key "") has no such table
    known = {kind: {} if set(table) <= {""} else table for kind, table in groups.items()}
    return VerdictStats(
        judge=judge, true_pass=counts["tp"], false_pass=counts["fp"], true_fail=counts["tn"], false_fail=counts["fn"],
        kappa=cohen_kappa(list(passed), [i.label_passed for i in items]), per_category=groups["category"],
        per_app=known["app"], per_voice=known["voice"],
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
    verdicts: tuple[VerdictStats, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdicts": [v.to_dict() for v in self.verdicts],
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
        for stats in self.verdicts:
            out.append("")
            out.append(stats.format())
        for comparison in (*self.vs_labels, *self.between_judges):
            out.append("")
            out.append(f"{comparison.raters[0]} vs {comparison.raters[1]}:")
            out.append(f"  {'question':<20} {'kappa':>7} {'agree':>7}")
            for q, (kappa, raw) in comparison.per_question.items():
                if raw is not None:
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


def resolve_judge(name: str, options: Mapping[str, Any] | None = None, *, host: Any = None) -> Judge:
    """A judge by name: ``judge-rules``, ``judge-llm`` (with ``options``), or any judge a plugin
    registered through ``sregym_oracles`` (in ``host``, default: the installed plugins)."""
    options = dict(options or {})
    if name == "judge-rules":
        from .rules import make_rules_judge

        return make_rules_judge(**{k: v for k, v in options.items() if k in ("threshold", "rubric")})
    specs = {n: s for n, s in _host_of_installed_plugins(host).get_oracles().items() if s.kind == "judge"}
    if name not in specs:
        raise ConfigError(f"unknown judge {name!r}", hints=(f"known judges: {', '.join(sorted(specs) or ['judge-rules'])}",))
    return specs[name].factory(**options)


def calibrate(
    judges: Sequence[str | Judge],
    dataset: str | os.PathLike[str] | Iterable[CalibrationItem] | None = None,
    *,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    host: Any = None,
    truth: str = "run",
) -> CalibrationReport:
    """Run ``judges`` (names or judge objects; one or two) over a labelled set.

    :param judges: e.g. ``["judge-llm", "judge-rules"]``.
    :param dataset: a JSONL path or loaded items; default the shipped set.
    :param options: per judge name, factory options (``{"judge-llm": {"model": ...}}``).
    :param progress: called as ``progress(judge, done, total)``.
    :param host: the plugin host to find judges and curated problems in (default: the installed plugins).
    :param truth: how a blind set's ground truths are derived: ``run`` or ``detached`` (:func:`curated_truths`).
    :returns: kappa of every judge against the labels and, with two judges, between them.
    """
    if not judges:
        raise ConfigError("calibrate needs at least one judge", hints=("e.g. --judge judge-rules",))
    if dataset is None or isinstance(dataset, str | os.PathLike):
        label = str(dataset or labelled_set_path())
        items = load_dataset(dataset, host=host, truth=truth)
    else:
        items = list(dataset)
        label = "(items)"
    instances = [resolve_judge(j, (options or {}).get(j), host=host) if isinstance(j, str) else j for j in judges]
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
    label_passed = [i.label_passed for i in items]
    vs_labels: tuple[Agreement, ...] = ()
    if all(i.labels is not None for i in items):  # per-question labels: kappa per question too
        label_answers = [dict(i.labels or {}) for i in items]
        vs_labels = tuple(  # (only for judges answering the same questions: not the upstream rubric)
            compare(n, *results[n], "labels", label_answers, label_passed) for n in names
            if all(set(QUESTION_IDS) <= set(a) for a in results[n][0])
        )
    between: tuple[Agreement, ...] = ()
    if len(names) >= 2:
        between = tuple(
            compare(a, *results[a], b, *results[b]) for i, a in enumerate(names) for b in names[i + 1 :]
            if all(set(QUESTION_IDS) <= set(x) for x in results[a][0] + results[b][0])
        )
    categories: dict[str, int] = {}
    for item in items:
        categories[item.category] = categories.get(item.category, 0) + 1
    disagreements = {
        n: tuple(i.id for i, p in zip(items, results[n][1], strict=True) if p != i.label_passed) for n in names
    }
    return CalibrationReport(
        verdicts=tuple(verdict_stats(n, items, results[n][1]) for n in names),
        dataset=label,
        items=len(items),
        categories=categories,
        vs_labels=vs_labels,
        between_judges=between,
        judge_errors=errors,
        cost=cost,
        disagreements=disagreements,
    )
