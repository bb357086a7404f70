"""``judge-rules``: a deterministic, offline diagnosis judge.

It answers the nine checklist questions by matching the diagnosis text against the structured ground
truth: component names as words (with pod suffixes and datastore aliases), the namespace, the resource
kind or layer, mechanism keywords (the truth's own plus :mod:`.lexicon`), concrete mutated values (the
wrong port, the image tag), and which side of a causal sentence each component is on. A diagnosis
that names most of the app's components is over-broad and fails the whole scope dimension.

It is the judge used offline, in tests and as a calibration baseline for ``judge-llm``; it can be
fooled by text crafted against it, which is why the LLM judge exists.

.. versionadded:: 0.1
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from sregym_core.types import GroundTruth

from . import lexicon, text
from .judge import (
    CHECKLIST,
    DEFAULT_THRESHOLD,
    ChecklistAnswer,
    JudgeVerdict,
    check_threshold,
    clip_submission,
    coerce_truth,
    make_verdict,
)

NAME = "judge-rules"


@attrs.frozen
class _Answer:
    answer: bool
    evidence: str
    confidence: float = 1.0


@attrs.define
class _Reading:
    """What the rules extracted from one diagnosis, shared by the nine questions."""

    flat: str
    flat_values: str  # the text with namespace names masked, for concrete values
    clauses: list[text.Clause]
    mentions: list[text.Mention]
    truth_components: set[str]
    named: set[str]  # components mentioned outside exonerating clauses
    blamed_unrelated: set[str]
    over_broad: str | None  # why the blame is over-broad, if it is


class RulesJudge:
    """The deterministic checklist judge.

    :param threshold: composite score needed to pass (default 0.7).
    :param over_broad_fraction: naming at least this fraction of the app's non-faulty components
        (and at least ``over_broad_min``) makes the blame over-broad.
    """

    name = NAME

    def __init__(self, *, threshold: float = DEFAULT_THRESHOLD, over_broad_fraction: float = 0.4, over_broad_min: int = 3):
        self.threshold = check_threshold(threshold)
        self.over_broad_fraction = over_broad_fraction
        self.over_broad_min = over_broad_min

    def judge(
        self,
        submission: str,
        truth: tuple[GroundTruth, ...] | GroundTruth,
        *,
        app_components: tuple[str, ...] = (),
        app_namespace: str = "",
    ) -> JudgeVerdict:
        truths = coerce_truth(truth)
        submission, submitted_chars = clip_submission(submission)
        if not submission.strip():
            answers = [_answer(q.id, _Answer(False, "empty submission")) for q in CHECKLIST]
        else:
            reading = self._read(submission, truths, app_components, app_namespace)
            answers = [_answer(q.id, self._ask(q.id, reading, truths, app_namespace)) for q in CHECKLIST]
        return make_verdict(
            judge=self.name,
            answers=answers,
            threshold=self.threshold,
            submission=submission,
            truth=truths,
            app_components=tuple(app_components),
            app_namespace=app_namespace,
            cost=0.0,
            submitted_chars=submitted_chars,
        )

    # ---------------------------------------------------------------------------------------------
    # reading the diagnosis
    # ---------------------------------------------------------------------------------------------

    def _read(
        self, submission: str, truths: Sequence[GroundTruth], app_components: Iterable[str], app_namespace: str
    ) -> _Reading:
        truth_components = {c.lower() for t in truths for c in t.components}
        components = set(c.lower() for c in app_components) | truth_components
        clause_list = text.clauses(submission)
        namespaces = {app_namespace} | {t.namespace for t in truths}
        mentions = text.find_mentions(clause_list, components, reserved=namespaces - components)
        named = {m.component for m in mentions if _identifies(clause_list, mentions, m)}
        blamed = self._blamed(clause_list, mentions, truth_components)
        unrelated_named = {m.component for m in mentions if not clause_list[m.clause].exonerating} - truth_components
        others = len(components - truth_components)
        needed = max(self.over_broad_min, math.ceil(self.over_broad_fraction * others)) if others else math.inf
        over_broad = None
        flat = text.flatten(submission)
        if len(unrelated_named) >= needed:
            over_broad = f"names {len(unrelated_named)} of the {others} components that are not faulty: " + ", ".join(
                sorted(unrelated_named)
            )
        else:
            blaming = " . ".join(text.flatten(c.text) for c in clause_list if c.cause_side)
            for phrase in lexicon.OVER_BROAD_PHRASES:
                found = text.find_phrase(blaming, phrase)
                if found:
                    over_broad = f"blames the whole application: {found!r}"
                    break
        masked = text.normalize(submission)
        for ns in sorted(namespaces, key=len, reverse=True):
            if ns:
                masked = masked.replace(ns.lower(), " ")
        return _Reading(flat, text.flatten(masked), clause_list, mentions, truth_components, named, blamed, over_broad)

    @staticmethod
    def _blamed(clause_list: Sequence[text.Clause], mentions: Sequence[text.Mention], truth: set[str]) -> set[str]:
        """Unrelated components a cause clause blames. In "search is configured with the wrong port for
        geo", geo comes after the faulty component: it is the object, not the culprit."""
        blamed: set[str] = set()
        for index, clause in enumerate(clause_list):
            if not clause.cause_side:
                continue
            for mention in (m for m in mentions if m.clause == index):
                if mention.component in truth:
                    break
                blamed.add(mention.component)
        return blamed

    # ---------------------------------------------------------------------------------------------
    # the nine questions
    # ---------------------------------------------------------------------------------------------

    def _ask(self, question: str, r: _Reading, truths: Sequence[GroundTruth], app_namespace: str) -> _Answer:
        return getattr(self, "_q_" + question)(r, truths, app_namespace)

    def _q_loc_component(self, r: _Reading, truths: Sequence[GroundTruth], _ns: str) -> _Answer:
        visible = [t for t in truths if t.user_visible] or list(truths)
        wanted = {c.lower() for t in visible for c in t.components}
        hit = sorted(wanted & r.named)
        if hit:
            return _Answer(True, "names faulty component(s): " + ", ".join(hit))
        elsewhere = sorted(wanted & {m.component for m in r.mentions})
        if elsewhere:
            return _Answer(False, "mentions " + ", ".join(elsewhere) + " only as healthy or as a victim, not as the cause")
        return _Answer(False, "does not name " + " or ".join(sorted(wanted)))

    def _q_loc_namespace(self, r: _Reading, truths: Sequence[GroundTruth], app_namespace: str) -> _Answer:
        namespaces = sorted({t.namespace for t in truths if t.namespace})
        for ns in namespaces:
            found = text.find_phrase(r.flat, ns, allow_negated=True)
            if found:
                return _Answer(True, f"names namespace {ns!r}: {found!r}")
        other = _other_namespace(" ".join(c.text for c in r.clauses), namespaces)
        if other:
            return _Answer(False, f"points at namespace {other!r}, the fault is in {', '.join(namespaces)}")
        if r.named & r.truth_components and all(ns == app_namespace for ns in namespaces):
            return _Answer(True, "namespace implied: the app has one namespace and the right component is named", 0.6)
        return _Answer(False, "namespace not stated and no faulty component named")

    def _q_loc_kind(self, r: _Reading, truths: Sequence[GroundTruth], _ns: str) -> _Answer:
        for t in truths:
            kind = t.resource_kind.lower().replace(" ", "")
            terms = [t.resource_kind, *lexicon.KIND_TERMS.get(kind, ()), *lexicon.LAYER_TERMS.get(t.layer, ())]
            terms += [w for w in re.findall(r"[a-z]{4,}", t.resource_kind.lower())]
            for term in terms:
                found = text.find_phrase(r.flat, term)
                if found:
                    return _Answer(True, f"identifies {t.resource_kind} ({t.layer}) via {term!r}: {found!r}")
        kinds = ", ".join(sorted({f"{t.resource_kind} ({t.layer})" for t in truths}))
        return _Answer(False, f"does not identify the resource kind or layer: {kinds}")

    def _mechanism(self, r: _Reading, truths: Sequence[GroundTruth]) -> _Answer:
        for t in truths:
            terms = list(t.keywords) + list(lexicon.MECHANISM_TERMS.get(t.fault, ()))
            for term in terms:
                found = _find_term(r, term)
                if found:
                    return _Answer(True, f"mechanism of {t.fault} via {term!r}: {found!r}")
            # without any vocabulary, fall back to the mechanism's own words (most of them present)
            words = [w for w in re.findall(r"[a-z0-9]{4,}", text.flatten(t.mechanism)) if w not in _STOP]
            if words and not terms:
                present = [w for w in words if re.search(rf"(?<![a-z0-9]){re.escape(w)}", r.flat)]
                if len(present) / len(words) >= 0.6:
                    return _Answer(True, f"mechanism of {t.fault}: mentions {', '.join(present)}", 0.7)
        return _Answer(False, "mechanism not described: expected " + "; ".join(t.mechanism for t in truths))

    def _q_char_mechanism(self, r: _Reading, truths: Sequence[GroundTruth], _ns: str) -> _Answer:
        return self._mechanism(r, truths)

    def _q_char_values(self, r: _Reading, truths: Sequence[GroundTruth], _ns: str) -> _Answer:
        values = [v for t in truths for v in concrete_values(t)]
        if not values:
            mechanism = self._mechanism(r, truths)
            return _Answer(mechanism.answer, "no concrete values in the truth; follows the mechanism", 0.6)
        for value in values:
            found = text.find_phrase(r.flat_values, value)
            if found:
                return _Answer(True, f"states concrete value {value!r}: {found!r}")
        return _Answer(False, "states none of the mutated values: " + ", ".join(values[:6]))

    def _q_char_chain(self, r: _Reading, truths: Sequence[GroundTruth], _ns: str) -> _Answer:
        mechanism = self._mechanism(r, truths)
        if not mechanism.answer:
            return _Answer(False, "no symptom-cause chain without the right mechanism")
        if not r.named & r.truth_components:
            return _Answer(False, "the chain starts from the wrong component")
        for t in truths:
            for symptom in t.symptoms:
                found = text.find_phrase(r.flat, symptom) or _loose_phrase(r.flat, symptom)
                if found:
                    return _Answer(True, f"links the mechanism to symptom {symptom!r}: {found!r}")
        for word in lexicon.CAUSAL_WORDS + lexicon.GENERIC_SYMPTOMS:
            found = text.find_phrase(r.flat, word, allow_negated=True)
            if found:
                return _Answer(True, f"links the mechanism to its effect via {word!r}: {found!r}", 0.7)
        return _Answer(False, "states the mechanism but not what it causes")

    def _q_scope_no_unrelated(self, r: _Reading, _truths: Sequence[GroundTruth], _ns: str) -> _Answer:
        if r.over_broad:
            return _Answer(False, "over-broad blame: " + r.over_broad)
        if r.blamed_unrelated:
            return _Answer(False, "blames component(s) that are not faulty: " + ", ".join(sorted(r.blamed_unrelated)))
        return _Answer(True, "blames no unrelated component")

    def _q_scope_all_faults(self, r: _Reading, _truths: Sequence[GroundTruth], _ns: str) -> _Answer:
        if r.over_broad:
            return _Answer(False, "naming everything does not identify the faulty components: " + r.over_broad)
        missing = sorted(r.truth_components - r.named)
        if missing:
            return _Answer(False, "does not name faulty component(s): " + ", ".join(missing))
        return _Answer(True, "names every faulty component: " + ", ".join(sorted(r.truth_components)))

    def _q_scope_priority(self, r: _Reading, truths: Sequence[GroundTruth], _ns: str) -> _Answer:
        if r.over_broad:
            return _Answer(False, "over-broad blame sets no priority")
        visible = {c.lower() for t in truths if t.user_visible for c in t.components}
        latent = {c.lower() for t in truths if not t.user_visible for c in t.components} - visible
        if not latent or not visible:
            return _Answer(True, "single class of fault: nothing to prioritise", 0.6)
        order = [m.component for m in r.mentions if m.component in visible | latent and not r.clauses[m.clause].exonerating]
        if not order:
            return _Answer(False, "names none of the faults")
        if order[0] in visible:
            return _Answer(True, f"presents the user-visible fault ({order[0]}) first")
        for cue in lexicon.LATENT_CUES:
            found = text.find_phrase(r.flat, cue)
            if found and any(v in r.named for v in visible):
                return _Answer(True, f"marks the latent fault as secondary: {found!r}", 0.7)
        return _Answer(False, f"leads with the latent fault ({order[0]}) over the user-visible one")


_STOP = frozenset({"that", "this", "with", "from", "into", "than", "does", "have", "were", "which", "their", "there", "them"})


_NAMESPACE_AFTER = re.compile(r"(?:\bnamespace[: ]+|\s-n\s+|--namespace[ =])`?([a-z0-9][a-z0-9-]*)")
_NAMESPACE_BEFORE = re.compile(r"\b(?:the|in|of)\s+`?([a-z0-9][a-z0-9-]*)`?\s+namespace\b")
_NOT_A_NAMESPACE = frozenset(
    {"is", "was", "the", "its", "this", "that", "same", "app", "application", "right", "wrong", "correct", "a", "an",
     "one", "each", "every", "target", "affected", "whole", "entire", "given", "benchmark", "which", "and", "of", "in",
     "as", "for", "to", "with", "on", "where", "so", "by", "but", "it", "has", "have", "are", "were", "be", "not", "no",
     "all", "other", "another", "both", "shared", "default-deny"}
)


def _other_namespace(normalized: str, namespaces: Sequence[str]) -> str | None:
    """A namespace the diagnosis points at that is not the fault's ("in the default namespace")."""
    for pattern in (_NAMESPACE_AFTER, _NAMESPACE_BEFORE):
        for match in pattern.finditer(normalized):
            candidate = match.group(1)
            if candidate not in _NOT_A_NAMESPACE and candidate not in namespaces:
                return candidate
    return None


def _identifies(clause_list: Sequence[text.Clause], mentions: Sequence[text.Mention], mention: text.Mention) -> bool:
    """Does this mention point at the component as the problem? Cause and plain clauses do; an
    effect clause does too when its cause names no component ("geo crashes because of a bad key")."""
    clause = clause_list[mention.clause]
    if clause.identifies:
        return True
    if clause.role != "effect":
        return False
    partners = [i for i, c in enumerate(clause_list) if c.group == clause.group and c.cause_side]
    return bool(partners) and not any(m.clause in partners for m in mentions)


def _find_term(r: _Reading, term: str) -> str | None:
    """A vocabulary term; ``a+b`` means both phrases in one clause ("image ... does not exist")."""
    if "+" not in term:
        return text.find_phrase(r.flat, term)
    parts = [p.strip() for p in term.split("+") if p.strip()]
    for clause in r.clauses:
        flat = text.flatten(clause.text)
        found = [text.find_phrase(flat, p) for p in parts]
        if all(found):
            return found[0]
    return None


def _loose_phrase(flat: str, phrase: str) -> str | None:
    """A symptom phrase counts when two thirds of its distinctive words are present."""
    words = [w for w in re.findall(r"[a-z0-9]{4,}", text.flatten(phrase)) if w not in _STOP]
    if not words:
        return None
    present = [w for w in words if re.search(rf"(?<![a-z0-9]){re.escape(w)}", flat)]
    return ", ".join(present) if len(present) * 3 >= len(words) * 2 else None


def concrete_values(truth: GroundTruth) -> list[str]:
    """The distinctive mutated values a diagnosis could state (never the pre-fault ones)."""
    components = {c.lower() for c in truth.components}
    values: list[str] = []

    def add(value: Any) -> None:
        if isinstance(value, bool) or value is None:
            return
        if isinstance(value, Mapping):
            for key, item in value.items():
                if key not in ("before", "baseline", "original"):
                    add(item)
            return
        if isinstance(value, list | tuple):
            for item in value:
                add(item)
            return
        string = str(value).strip()
        if string.lower() in lexicon.TRIVIAL_VALUES or string.lower() in components or len(string) < 2:
            return
        values.append(string)
        if re.fullmatch(r"[\w./-]+:[\w.-]+", string):  # image reference or host:port: the tag/port alone counts too
            tag = string.rsplit(":", 1)[1]
            if len(tag) >= 2 and tag.lower() not in lexicon.TRIVIAL_VALUES:
                values.append(tag)

    for key, value in truth.mutated_values.items():
        if re.search(r"[A-Z_.]", key) and key.lower() not in components:  # env var / config key names
            values.append(key)
        add(value)
    return list(dict.fromkeys(values))


def _answer(question_id: str, found: _Answer) -> ChecklistAnswer:
    q = next(q for q in CHECKLIST if q.id == question_id)
    return ChecklistAnswer(
        id=q.id, dimension=q.dimension, question=q.question, answer=found.answer, evidence=found.evidence, confidence=found.confidence
    )


def make_rules_judge(**config: Any) -> RulesJudge:
    """``OracleSpec`` factory: ``threshold`` (and tuning knobs) from the problem's configuration."""
    allowed = {"threshold", "over_broad_fraction", "over_broad_min"}
    unknown = sorted(set(config) - allowed)
    if unknown:
        from sregym_core.errors import ConfigError

        raise ConfigError(f"judge-rules does not take {', '.join(unknown)}", hints=(f"known options: {', '.join(sorted(allowed))}",))
    return RulesJudge(**config)
