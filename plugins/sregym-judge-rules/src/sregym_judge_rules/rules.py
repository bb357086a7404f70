"""``judge-rules``: a deterministic, offline diagnosis judge that reads what a diagnosis *asserts*.

It answers the nine checklist questions from the structured ground truth, reading the diagnosis as
an SRE grader would:

* only prose counts: pasted tool output (kubectl tables, describe blocks, logs, JSON/YAML) is
  evidence, not an explanation (:mod:`.reading`);
* a hedge ("either geo or rate", "could be", "possibly") asserts nothing;
* a mechanism counts only when asserted about the faulty component (in the same sentence, or in a
  sentence that carries on with it as the subject), in the fault's vocabulary
  (``GroundTruth.vocabulary``, else :data:`.lexicon.MECHANISMS`); generic words alone never do;
* a causal link needs a connective between the mechanism and a symptom in prose;
* concrete values are the mutated values only (never key names or pre-fault values);
* blame comes from cause-side mentions only: components ruled out, healthy, or victims do not count.

Hard gates decide before the checklist can pass (they are stored in ``inputs["gates"]`` so an LLM
judge can use them as its gate too): the faulty component must be asserted as the cause, a hedge
between components fails, a kitchen sink of mechanisms fails, and text addressed to the grader
(prompt injection) fails.

With ``rubric="upstream"`` the same reading answers upstream SREGym's checklist (D1-Q1 ... D3-Q3,
weights 0.33/0.33/0.34, rounding to 0.01).

.. versionadded:: 0.1
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from sregym_core.oracles.judge import (
    DEFAULT_THRESHOLD,
    ChecklistAnswer,
    JudgeVerdict,
    check_threshold,
    checklist_for,
    clip_submission,
    coerce_truth,
    make_verdict,
)
from sregym_core.types import GroundTruth

from . import claims, concepts, lexicon, quantity, reading, secondcause, text

NAME = "judge-rules"
RUBRICS = ("sregym", "upstream")


@attrs.frozen
class _Answer:
    answer: bool
    evidence: str
    confidence: float = 1.0


@attrs.define
class Reading:
    """What the rules extracted from one diagnosis, shared by the questions."""

    prose: str
    flat: str  # flattened prose, hedged sentences removed
    flat_values: str  # the same with namespace names masked, for concrete values
    sentences: list[reading.Sentence]
    clauses: list[text.Clause]
    clause_sentence: list[int]
    mentions: list[text.Mention]
    truth_components: set[str]
    asserted: set[str]  # faulty components asserted (not hedged, not only as a victim or healthy)
    blamed_unrelated: set[str]
    hedged_components: set[str]
    hedged_others: set[str]  # components other than the faulty ones offered in a hedge (not exonerated)
    over_broad: str | None
    mechanism: dict[str, str]  # truth fault -> evidence of its mechanism asserted about its component
    other_mechanisms: dict[str, str]  # other fault families asserted -> evidence
    chain: str | None
    injection: str | None
    gates: dict[str, Any] = attrs.Factory(dict)
    # which sentence asserted what: component -> sentence, fault -> (phrase, sentence)
    component_sentences: dict[str, str] = attrs.Factory(dict)
    mechanism_sentences: dict[str, tuple[str, str]] = attrs.Factory(dict)
    chain_sentence: str | None = None
    # other fault families asserted as a cause added to the truth's ("in addition", "as well", "two faults")
    added_mechanisms: dict[str, str] = attrs.Factory(dict)

    def evidence(self, truths: Sequence[GroundTruth]) -> dict[str, Any]:
        """What the verdict rests on, each with the sentence of the diagnosis that asserted it: the
        faulty component(s), the mechanism, each mutated value stated, and the causal link."""
        values = []
        seen: set[str] = set()
        names = {m.component for m in self.mentions} | self.truth_components
        mutated = {k: v for t in truths for k, v in t.mutated_values.items()}
        for s in self.sentences:
            if s.hedged:
                continue
            for t in truths:
                for value in concrete_values(t):
                    if value.lower() in names or value in seen:
                        continue
                    if text.find_phrase(s.flat, value, allow_negated=True):
                        seen.add(value)
                        values.append({"value": value, "sentence": s.raw})
            found = quantity.find_quantity(s.flat, mutated)
            if found and found[0] not in seen:
                seen.add(found[0])
                values.append({"value": found[0], "as": found[1], "sentence": s.raw})
        return {
            "component": [{"component": c, "sentence": raw} for c, raw in sorted(self.component_sentences.items())],
            "mechanism": [{"fault": f, "phrase": phrase, "sentence": raw}
                          for f, (phrase, raw) in self.mechanism_sentences.items()],
            "values": values,
            "chain": self.chain_sentence,
        }


class RulesJudge:
    """The deterministic checklist judge.

    :param threshold: composite score needed to pass (default 0.7).
    :param over_broad_fraction: blaming at least this fraction of the app's non-faulty components
        (and at least ``over_broad_min``) makes the blame over-broad.
    :param rubric: ``sregym`` (the project's checklist) or ``upstream`` (upstream SREGym's).
    """

    name = NAME

    def __init__(self, *, threshold: float = DEFAULT_THRESHOLD, over_broad_fraction: float = 0.4,
                 over_broad_min: int = 3, rubric: str = "sregym"):
        from sregym_core.errors import ConfigError

        self.threshold = check_threshold(threshold)
        self.over_broad_fraction = over_broad_fraction
        self.over_broad_min = over_broad_min
        if rubric not in RUBRICS:
            raise ConfigError(f"unknown rubric {rubric!r}", hints=(f"use one of {', '.join(RUBRICS)}",))
        self.rubric = rubric

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
        checklist = checklist_for(self.rubric)
        if not submission.strip():
            answers = [_answer(q, _Answer(False, "empty submission")) for q in checklist]
            gates: dict[str, Any] = {"passed": False, "reason": "empty submission"}
            evidence: dict[str, Any] = {"component": [], "mechanism": [], "values": [], "chain": None}
        else:
            r = self.read(submission, truths, app_components, app_namespace)
            asker = _SregymQuestions(r, truths, app_namespace) if self.rubric == "sregym" else _UpstreamQuestions(r, truths, app_namespace)
            answers = [_answer(q, _apply_gates(q.id, r, asker.ask(q.id), self.rubric)) for q in checklist]
            gates = r.gates
            evidence = r.evidence(truths)
        verdict = make_verdict(
            judge=self.name,
            answers=answers,
            threshold=self.threshold,
            submission=submission,
            truth=truths,
            app_components=tuple(app_components),
            app_namespace=app_namespace,
            cost=0.0,
            submitted_chars=submitted_chars,
            rubric=self.rubric,
        )
        return attrs.evolve(verdict, inputs={**verdict.inputs, "gates": gates, "evidence": evidence})

    # ---------------------------------------------------------------------------------------------
    # reading the diagnosis
    # ---------------------------------------------------------------------------------------------

    def read(self, submission: str, truths: Sequence[GroundTruth], app_components: Iterable[str], app_namespace: str,
             *, hidden: bool = True) -> Reading:
        truth_components = {c.lower() for t in truths for c in t.components}
        components = {c.lower() for c in app_components} | truth_components
        namespaces = {app_namespace} | {t.namespace for t in truths}
        prose, _pasted = reading.split_prose(reading.json_as_prose(submission) or submission)
        sentences = reading.sentences(prose)
        clause_list: list[text.Clause] = []
        clause_sentence: list[int] = []
        for s in sentences:
            for clause in text.clauses(s.raw):
                clause_list.append(clause)
                clause_sentence.append(s.index)
        mentions = text.find_mentions(clause_list, components, reserved=namespaces - components, known=components)
        any_mentions = text.find_mentions(clause_list, components, reserved=namespaces - components, weak=True, known=components)
        sentences = _mark_alternatives(sentences, clause_list, clause_sentence, any_mentions)
        # components the truth itself involves (a stale workload, the role's owner) are not unrelated
        involved = truth_components | ({str(v).lower() for t in truths for v in _scalars(t.mutated_values)} & components)
        involved |= {text.datastore_owner(c) for c in truth_components} & components  # postgres-geo's owner, geo

        def sentence_of(m: text.Mention) -> reading.Sentence:
            return sentences[clause_sentence[m.clause]]

        # components per sentence (any mention outside a "healthy/ruled out" clause)
        about: dict[int, set[str]] = {}
        for m in mentions:
            if not clause_list[m.clause].exonerating:
                about.setdefault(clause_sentence[m.clause], set()).add(m.component)
        # "station's pods are fine, but its Service asks for a label no pod has": a possessive pronoun opening a cause
        # clause after a clause that cleared a faulty component refers to that component (what is its is at fault)
        pronoun: dict[int, set[str]] = {}
        for m in mentions:
            if m.component in truth_components and clause_list[m.clause].exonerating:
                later = [c for i, c in enumerate(clause_list) if i > m.clause and clause_sentence[i] == clause_sentence[m.clause]]
                if later and later[0].cause_side and _POSSESSIVE_OPENING.match(later[0].text):
                    pronoun.setdefault(clause_sentence[m.clause], set()).add(m.component)
                elif not later or all(c.exonerating for c in later):
                    # the same after ";" or a full stop ("geo's CPU limit is fine; its memory limit was lowered"): the
                    # next sentence opens with the pronoun in its cause and names no component of its own
                    next_index = clause_sentence[m.clause] + 1
                    next_clauses = [i for i, s in enumerate(clause_sentence) if s == next_index]
                    # ... or names none at all after clearing one of the component's own things ("geo's image is
                    # fine; the memory limit was lowered"): what was cleared was the component's, so is what follows
                    owned = re.match(r"\s*(?:'s|’s|')(?![a-z])", clause_list[m.clause].text[m.end:]) is not None
                    if (next_clauses and clause_list[next_clauses[0]].cause_side
                            and (owned or _POSSESSIVE_OPENING.match(clause_list[next_clauses[0]].text))
                            and not any(clause_sentence[x.clause] == next_index for x in any_mentions)):
                        pronoun.setdefault(next_index, set()).add(m.component)
        # "checkout cannot list products because its setting for the product catalog points at port 8082": a possessive
        # pronoun opening the cause refers to the component the effect is said of (its subject); what the possessed
        # thing is for ("for the product catalog") is its object, not a culprit
        for m in mentions:
            if m.component in truth_components and clause_list[m.clause].role == "effect" and \
                    m is next(x for x in mentions if x.clause == m.clause):
                later = [c for i, c in enumerate(clause_list) if i > m.clause and clause_sentence[i] == clause_sentence[m.clause]]
                if later and later[0].cause_side and _POSSESSIVE_OPENING.match(later[0].text):
                    pronoun.setdefault(clause_sentence[m.clause], set()).add(m.component)
        for index, named_before in pronoun.items():
            about.setdefault(index, set()).update(named_before)
        complements = [m for m in any_mentions if clause_sentence[m.clause] in pronoun
                       and _possessed_complement(clause_list[m.clause].text, m)]
        if complements:
            mentions = [m for m in mentions if m not in complements]
            for m in complements:
                if not any(x.component == m.component and clause_sentence[x.clause] == clause_sentence[m.clause]
                           for x in mentions):
                    about.get(clause_sentence[m.clause], set()).discard(m.component)
        hedged_components = {m.component for m in mentions if sentence_of(m).hedged}
        component_sentences: dict[str, str] = {}
        for m in mentions:
            if (m.component in truth_components and not sentence_of(m).hedged and m.component not in component_sentences
                    and _identifies(clause_list, mentions, m, involved) and not _in_apposition(clause_list, any_mentions, m)):
                component_sentences[m.component] = sentence_of(m).raw
        asserted = set(component_sentences)
        subjects = [m for m in any_mentions if m not in mentions and m not in complements
                    and _SUBJECT_AFTER.match(clause_list[m.clause].text[m.end:])]
        blamed = self._blamed(clause_list, clause_sentence, sentences, sorted([*mentions, *subjects], key=lambda m: (m.clause, m.start)),
                              involved)
        blamed |= _table_rows_blamed(sentences, components - involved, involved)
        exonerated = {m.component for m in any_mentions if clause_list[m.clause].exonerating}
        hedged_others = {m.component for m in any_mentions if sentences[clause_sentence[m.clause]].hedged
                         and not sentences[clause_sentence[m.clause]].action} - involved - exonerated
        # "the geo service could still log in to its database, but ...": "its database" in a sentence that names the owner
        # of a faulty datastore is that datastore, as "geo's database" is (round 24)
        owned_stores: dict[int, set[str]] = {}
        for m in any_mentions:
            index = clause_sentence[m.clause]
            if clause_list[m.clause].exonerating or not _ITS_STORE.search(sentences[index].flat):
                continue
            for store in truth_components:
                owner = text.datastore_owner(store)
                if owner != store and not text._is_cache(store) and owner in (m.component, m.component.removesuffix("-service")):
                    owned_stores.setdefault(index, set()).add(store)
        for index, stores_here in owned_stores.items():
            about.setdefault(index, set()).update(stores_here)
        # "all six of the app's databases", "every one of its databases": a datastore word quantified over all of them
        # names every datastore of the app when the fault is in every one of them (a correlated fault), and only then
        every_store = _every_store_sentences(sentences, truth_components, components)
        # not where another component is named beside them ("every database of the app (search, postgres-rate, ...)")
        every_store = {i for i in every_store if not about.get(i, set()) - involved}
        for index in every_store:
            about.setdefault(index, set()).update(truth_components)
        others = len(components - truth_components)
        needed = max(self.over_broad_min, math.ceil(self.over_broad_fraction * others)) if others else math.inf
        over_broad = None
        if len(blamed) >= needed:
            over_broad = f"blames {len(blamed)} of the {others} components that are not faulty: " + ", ".join(sorted(blamed))
        else:
            blaming = " . ".join(text.flatten(c.text) for c in clause_list if c.cause_side)
            # "all pods on that node": the node's pods, evidence about the node, not blame of everything
            blaming = re.sub(r"\ball (?:the )?pods (?:on|of|scheduled on|running on) (?:that|the|this|one|a|its) "
                             r"(?:node|host|machine)\b", " ", blaming)
            for phrase in lexicon.OVER_BROAD_PHRASES:
                if every_store and "database" in phrase:
                    continue  # every database is where the fault is
                found = _blames_everything(blaming, phrase)
                if found:
                    over_broad = f"blames the whole application: {found!r}"
                    break

        # which sentence is about which components: a sentence naming none carries on the last topic
        topic: dict[int, set[str]] = {}
        current: set[str] = set()
        for s in sentences:
            if s.index in about:
                current = about[s.index]
            topic[s.index] = about.get(s.index) or current
        for s in sentences:  # a diagnosis may open with the mechanism and name the component next
            if topic[s.index]:
                break
            following = [about[i] for i in range(s.index + 1, min(s.index + 3, len(sentences))) if i in about]
            topic[s.index] = following[0] if following else set()
        # a faulty component named in plain words ("Kubernetes never considers search ready") counts
        # in a sentence that asserts its mechanism
        weak = [m for m in text.find_mentions(clause_list, truth_components, reserved=namespaces - components, weak=True, known=components)
                if not clause_list[m.clause].exonerating and not sentences[clause_sentence[m.clause]].hedged]
        for m in weak:
            topic[clause_sentence[m.clause]] = topic[clause_sentence[m.clause]] | {m.component}
        # a sentence naming a flag whose name carries a faulty component ("productCatalogFailure") is about it, unless
        # the diagnosis names another component of the app as where the flag acts ("recommendationCacheFailure makes
        # product-catalog's cache grow", "Root cause in frontend: ... productCatalogFailure")
        other_named = {c for named in about.values() for c in named} - involved
        if not other_named:
            for s in sentences:
                for c in _carried_by_identity(s.flat, truths):
                    topic[s.index] = topic[s.index] | {c}
        # a sentence whose cause side blames another component says nothing about the faulty one's
        # mechanism ("search is OOMKilled, so geo lookups fail")
        for index in topic:
            culprits = {m.component for m in [*mentions, *weak]
                        if clause_sentence[m.clause] == index and clause_list[m.clause].cause_side
                        and not _in_relative_clause(clause_list[m.clause].text, m)
                        and m.component not in involved - truth_components}  # flagd serving the flag is no culprit
            stated = {m.component for m in [*mentions, *weak]
                      if clause_sentence[m.clause] == index and clause_list[m.clause].role != "effect"}
            if culprits and not (culprits | stated) & truth_components:
                topic[index] = culprits
        # a sentence about what the fault itself involves (flagd serving the faulty flag, the database's
        # owner) is about the fault: "the paymentUnreachable flag was switched on in flagd-config"
        for index, about_here in topic.items():
            if about_here and about_here <= involved - truth_components:
                topic[index] = about_here | truth_components
        # the fault's own objects (the app's Ingress, its CronJob, kube-proxy, the CoreDNS ConfigMap, the job holding
        # the lock) named in a sentence make it a sentence about the fault: the component is only where it shows.
        # Likewise a component named only in pasted evidence is what the prose around it explains.
        anchored = _object_sentences(sentences, truths, components, about, involved)
        # a sentence naming the platform object only by its kind is about the fault only when it says what was changed
        # in it, outside the kind ("the kubelet configuration has its GC thresholds swapped"), not what the object
        # does ("the kubelet stopped posting status", "all nodes NotReady": what any of its faults shows)
        for index in [i for i in anchored if _kind_only(sentences[i].flat, truths, components)]:
            if not _change_said(sentences[index].flat, truths, components):
                del anchored[index]
        if not about and not any(not clause_list[m.clause].exonerating for m in any_mentions):
            shown = _pasted_components(_pasted, components)
            if shown and shown <= involved:
                anchored.update({s.index: False for s in sentences if not s.hedged and s.index not in anchored})
        for index in anchored:
            topic[index] = topic[index] | truth_components
        # a sentence that only says something is fine or ruled out asserts no other mechanism
        exonerating = ({clause_sentence[i] for i, c in enumerate(clause_list) if c.exonerating}
                       - {clause_sentence[i] for i, c in enumerate(clause_list) if c.cause_side})
        details: dict[str, tuple[str, str]] = {}
        added: dict[str, str] = {}
        mechanism, other, mechanism_sentences = _mechanisms(sentences, topic, truths, components, exonerating, details,
                                                            added)
        every = sorted({(m.clause, m.start): m for m in [*mentions, *weak]}.values(), key=lambda m: (m.clause, m.start))
        for m in weak:
            if (clause_sentence[m.clause] in mechanism_sentences and _identifies(clause_list, every, m, involved)
                    and not _in_apposition(clause_list, every, m)):
                asserted.add(m.component)
                component_sentences.setdefault(m.component, sentences[clause_sentence[m.clause]].raw)
        for index in mechanism_sentences:
            # a system object other faults change too localizes only with a specific statement of the change
            # and naming the object itself ("cert-sync", "the CronJob") says which object, not what was done to it
            # (a sentence naming the object only by its platform kind stayed anchored only if it says what was changed)
            kind_only = index in anchored and _kind_only(sentences[index].flat, truths, components)
            said = [hit[0] for t in truths if index in anchored
                    for hit in [_truth_hit(_mask_names(sentences[index].flat, components), sentences[index].flat, t, vocabulary(t))]
                    if hit and not _names_the_object(hit[0], truths, components)]
            if index in anchored and (said or kind_only) and (not anchored[index] or kind_only
                                                              or any(_specific_statement(p) for p in said)
                                                              or _field_named(sentences[index].flat, truths)):
                for c in truth_components:
                    asserted.add(c)
                    component_sentences.setdefault(c, sentences[index].raw)
        for index in mechanism_sentences:
            for c in owned_stores.get(index, ()):
                asserted.add(c)
                component_sentences.setdefault(c, sentences[index].raw)
            if index in every_store:
                for c in truth_components:
                    asserted.add(c)
                    component_sentences.setdefault(c, sentences[index].raw)
        for index, named_before in pronoun.items():
            if index in mechanism_sentences:
                for c in named_before:
                    asserted.add(c)
                    component_sentences.setdefault(c, sentences[index].raw)
        # "the db" in a sentence that asserts the mechanism of the faulty datastore, already named as the
        # topic, refers to it ("user-timeline-service -> user-timeline-postgres: auth failed. role pw was
        # rotated in the db")
        named = {m.component for m in mentions if not clause_list[m.clause].exonerating}
        for index in mechanism_sentences:
            if _THE_STORE.search(sentences[index].flat):
                for c in truth_components & topic.get(index, set()) & named:
                    if text.datastore_owner(c) != c and c not in asserted:
                        asserted.add(c)
                        component_sentences.setdefault(c, sentences[index].raw)
        decoy = _decoy_instead(sentences, truths) or _near_miss(sentences, truths, components)
        if decoy:  # the faulty flag never named, a decoy named instead: not the fault's mechanism
            mechanism.pop(decoy[0], None)
            details.pop(decoy[0], None)
            if not mechanism:
                mechanism_sentences = []
        # the writer's declared cause ("Root cause: ts-mysql connection pool exhaustion", "the real cause is X's thread
        # pool") that names something else and neither the fault's component nor its mechanism: the fault's words
        # elsewhere were what the writer looked at and set aside, not the cause it gives (judge round 26, the negated
        # texts: the real cause named, cleared, and another declared)
        if mechanism and _declares_another_cause(sentences, mechanism_sentences, about, involved, other):
            mechanism, mechanism_sentences = {}, []
            details.clear()
        # a truth that says which of its values identifies it (a flag fault's flag: `identified_by`) is read only when
        # that value is named: "a feature flag was switched on" fits every flag, the truth's and its decoys (round 9)
        for fault in _identity_unnamed(sentences, truths, submission):
            mechanism.pop(fault, None)
            details.pop(fault, None)
            if not mechanism:
                mechanism_sentences = []
        # a signed offset said the other way round ("the clock runs 30 days ahead" for one 30 days behind) is the opposite
        # change, with other symptoms: not the fault's mechanism
        for t in truths:
            if t.fault in mechanism and _wrong_direction(" ".join(s.flat for s in sentences), t):
                mechanism.pop(t.fault, None)
                details.pop(t.fault, None)
                if not mechanism:
                    mechanism_sentences = []
        # a field that was set to an invalid value, named with no value and no statement of what is wrong with it ("it
        # has an invalid runAsUser"), says which field, not what it was set to: every fault of that field fits it
        # (red-team round 13, finding 5; the object-only texts of the blind sets)
        for fault in _field_name_only(details, truths, sentences):
            mechanism.pop(fault, None)
            details.pop(fault, None)
            if not mechanism:
                mechanism_sentences = []
        # the truth's environment variable never named, another one named where the writer states something (a JSON
        # record's "setting": "CART_ADDR" for PRODUCT_CATALOG_ADDR): the right object, another of its settings (round 27)
        for fault in _other_env_only(sentences, truths):
            if fault in mechanism:
                mechanism.pop(fault, None)
                details.pop(fault, None)
                if not mechanism:
                    mechanism_sentences = []
        # a flag named as the cause says which fault it is, whatever the component's place in the sentence: its name
        # may carry the component ("adFailure", "recommendationCacheFailure"), or the component is named as where it
        # acts ("the adFailure flag makes ad fail", "affected: cart"): the flag is blamed and, through it, the component.
        # Not when another component of the app is named as well (which one the flag breaks is then in question)
        named_anywhere = {m.component for m in any_mentions if not clause_list[m.clause].exonerating
                          and not sentence_of(m).hedged}
        for t in truths:
            if t.fault in mechanism and identifying_values(t) and not set(t.components) <= asserted and not other_named:
                for c in t.components:
                    if c.lower() not in exonerated and (c.lower() in named_anywhere or any(
                            c.lower() in _carried_by_identity(sentences[i].flat, [t]) for i in mechanism_sentences)):
                        asserted.add(c.lower())
                        component_sentences.setdefault(c.lower(), sentences[mechanism_sentences[0]].raw
                                                       if mechanism_sentences else mechanism[t.fault])
        # a faulty component named only inside an enumeration of three or more of the app's components, two of them
        # not involved in the fault ("it breaks ad, cart, checkout, frontend"), is one bet among several: the list
        # hedges between components whatever its verb, a kitchen sink of components (round 9)
        listed = _only_enumerated(clause_list, clause_sentence, sentences, any_mentions, truth_components, involved)
        if listed and over_broad is None:
            c, names = sorted(listed.items())[0]
            over_broad = (f"names {c} only in an enumeration of {len(names)} components, "
                          f"{len(names - involved)} of them not faulty: " + ", ".join(sorted(names)))
        if over_broad is None:
            for index in mechanism_sentences:
                many = about.get(index, set()) - truth_components
                if len(many) >= needed:
                    over_broad = f"asserts the mechanism about {len(many)} components that are not faulty: " + ", ".join(sorted(many))
                    break
        chain, chain_sentence = _chain(sentences, mechanism_sentences, truths)

        asserted_prose = [s for s in sentences if not s.hedged]
        flat = " . ".join(s.flat for s in asserted_prose)
        masked = flat
        for ns in sorted(namespaces, key=len, reverse=True):
            if ns:
                masked = masked.replace(text.flatten(ns), " ")
        for key in secondcause.changes_beyond(submission, truths):  # the writer's own diff (red-team round 18)
            added.setdefault(f"{key} (a change the writer's diff states)", key)
        r = Reading(
            prose=prose, flat=flat, flat_values=masked, sentences=sentences, clauses=clause_list,
            clause_sentence=clause_sentence, mentions=mentions, truth_components=truth_components, asserted=asserted,
            blamed_unrelated=blamed, hedged_components=hedged_components, hedged_others=hedged_others,
            over_broad=over_broad, mechanism=mechanism,
            other_mechanisms=other, chain=chain, injection=reading.injection(submission),
            component_sentences=component_sentences, mechanism_sentences=details, chain_sentence=chain_sentence,
            added_mechanisms=added if mechanism else {},
        )
        r.gates = _gates(r, truths)
        if hidden and r.gates["passed"]:
            self._hidden_second_cause(r, submission, truths, app_components, app_namespace)
        return r

    def _hidden_second_cause(self, r: Reading, submission: str, truths: Sequence[GroundTruth],
                             app_components: Iterable[str], app_namespace: str) -> None:
        """A second cause the writer states where the prose reading does not look (red-team round 19, finding 4): in a
        block quote, a heading, a comment in code (:func:`reading.hidden_claims`). Those sentences are read as the
        writer's, after the prose, only for what they add: when the reading with them finds another cause (another
        mechanism stated as a change, another component blamed) that the prose alone does not, the diagnosis states two
        causes. They never supply the fault's own mechanism or component."""
        if reading.json_as_prose(submission):
            return
        claims_ = reading.hidden_claims(submission)
        if not claims_:
            return
        again = self.read(submission + "\n\n" + "\n".join(claims_), truths, app_components, app_namespace, hidden=False)
        if again.gates.get("kitchen_sink"):
            r.gates["kitchen_sink"] = f"{again.gates['kitchen_sink']} (in a quote, heading, code comment or JSON object)"
            r.gates["passed"] = False

    @staticmethod
    def _blamed(clause_list: Sequence[text.Clause], clause_sentence: Sequence[int], sentences: Sequence[reading.Sentence],
                mentions: Sequence[text.Mention], truth: set[str]) -> set[str]:
        """Unrelated components a cause clause blames (hedged sentences included: "either geo or rate
        is broken" blames rate). In "search is configured with the wrong port for geo", geo comes after
        the faulty component: it is the object, not the culprit."""
        blamed: set[str] = set()
        for index, clause in enumerate(clause_list):
            hedged = sentences[clause_sentence[index]].hedged
            if sentences[clause_sentence[index]].action:
                continue  # an action or an observation ("## Other observations: search is slow too") blames nobody
            # "profile and user ... contribute to the errors": a contributing cause is blamed too (red-team round 12:
            # the noise's restarted pods named as contributors scored 1.0)
            contributes = not clause.exonerating and _contributes(clause.text)
            # a broken state said as one more ("Also profile has a memory leak", under "Contributing factor:") is a
            # cause of its own, wherever the clause stands (judge round 26)
            additive = (not clause.exonerating and (sentences[clause_sentence[index]].added or bool(_ONE_MORE.search(clause.text)))
                        and _asserts_a_fault(clause.text))
            if not (clause.cause_side or contributes or additive or (hedged and not clause.exonerating)):
                continue
            if not hedged and not contributes and not _asserts_a_fault(clause.text):
                continue  # "search's lookups fail, so ..." states a symptom, it blames nobody
            here = [m for m in mentions if m.clause == index]
            for position, mention in enumerate(here):
                if mention.component not in truth and _OBSERVER.match(clause.text[mention.end:]):
                    continue  # "frontend sees half of the searches fail": who sees the errors, not who causes them
                if mention.component not in truth:
                    # after the predicate ("someone removed the object that stores profile's login") a
                    # component is an object of the fault, not its culprit
                    if hedged or not (text.BLAME_CUES.search(clause.text[: mention.start])
                                      or _in_relative_clause(clause.text, mention)):
                        blamed.add(mention.component)
                elif not hedged and not (position + 1 < len(here) and text.listed(clause.text, here[position], here[position + 1])):
                    break  # what follows the culprit is its object ("wrong port for geo"), unless it is a list
        return blamed


_ITS_STORE = re.compile(r"\b(?:its|their)\s+(?:own\s+)?(?:database|db|datastore|postgres(?:ql)?)\b")
_EVERY_STORE = re.compile(r"\b(?:all|every|each)\b(?:\s+(?:one|two|three|four|five|six|seven|eight|nine|ten|\d+|of|the|its|"
                          r"their|our|[\w-]+'s))*\s+(?:[\w-]+\s+)?(?:databases?|dbs?|datastores?|postgres(?:ql)?)\b")


def _every_store_sentences(sentences: Sequence[reading.Sentence], truth_components: set[str],
                           components: set[str]) -> set[int]:
    """The asserted sentences that name every datastore of the app by a quantified datastore word ("all six of the
    app's databases", "every one of its databases"), when the fault is in every datastore of the app (not its caches)
    and in nothing else: one fault's datastore is never named by "all databases" (twenty-fourth round)."""
    stores = {c for c in components if text.datastore_owner(c) != c and not text._is_cache(c)}
    if len(truth_components) < 2 or truth_components != stores:
        return set()
    return {s.index for s in sentences if not s.hedged and _EVERY_STORE.search(s.flat)}


# a component as the one that sees, reports or receives the failures: an observer of the symptom
_OBSERVER = re.compile(r"^(?:'s\s+\w+)?\s+(?:(?:now|also|only|just|still)\s+)?(?:sees?|saw|seeing|observes?|observed|notices?|noticed|"
                       r"reports?|reported|receives?|received|experiences?|experienced|logs?|logged)\b")


# (judge round 26, SECURITY.md §26: a component blamed in words that name no mechanism the judge knows, "the cart service
# is also at fault", "and redis misbehaved too": the blame itself is said, whatever the fault)
_CONTRIBUTES = re.compile(r"\b(?:at\s+fault|to\s+blame|misbehav\w*|(?:is|are|was|were)\s+(?:also\s+|partly\s+)?(?:a\s+|the\s+)?"
                          r"(?:culprits?|responsible)|contribut\w*\s+to|(?:also|partly|jointly)\s+(?:cause[sd]?|causing|responsible|to blame)|"
                          r"part\s+of\s+the\s+(?:cause|problem|root\s+cause)|add(?:s|ing)?\s+to\s+the\s+(?:errors|failures|outage|problem))\b",
                          re.I)


# a clause that says it adds to what was said: opened by "also", "in addition", "separately", or "has also", "as well",
# "too" at its end (not an "also" inside a clause about something else: "a storm which continued also after the burst")
_ONE_MORE = re.compile(r"^\W*(?:(?:and|but)\s+)?(?:also|additionally|in\s+addition|besides|moreover|furthermore|"
                       r"on\s+top\s+of\s+(?:that|this|it)|plus|separately)\b|\b(?:as\s+well|too)\W*$"
                       r"|\b(?:is|are|was|were|has|have|had)\s+also\b")


# a sentence that declares the cause: "Root cause: ...", "the real cause is ...", "the actual issue is ..."
_DECLARED_CAUSE = re.compile(r"^\W*(?:the\s+)?(?:(?:real|actual|true|underlying)\s+)?(?:root[\s-]+)?cause\s*(?::|is\b)"
                             r"|\bthe\s+(?:real|actual|true)\s+(?:root\s+)?(?:cause|issue|problem|culprit|reason)\b")


def _declares_another_cause(sentences: Sequence[reading.Sentence], where: Sequence[int], about: Mapping[int, set[str]],
                            involved: set[str], other: Mapping[str, str]) -> bool:
    """Does every sentence that declares the cause name something else (a component the fault does not involve, another
    mechanism, a broken state) and neither the fault's mechanism nor a component it involves? (A "## Root cause"
    section's first sentence was tried as a declaration too: it cost a correct plain explanation and fixed nothing.)"""
    declared = [s for s in sentences if not s.hedged and not s.action and _DECLARED_CAUSE.search(s.flat)]
    if not declared:
        return False
    for s in declared:
        if s.index in where or about.get(s.index, set()) & involved:
            return False
        named_else = bool(about.get(s.index, set()) - involved)
        mechanism_else = any(s.raw[:160] in evidence for evidence in other.values())
        if not (named_else or mechanism_else or _BROKEN_STATE.search(s.flat) or _FAULT_NOUNS.search(s.flat)):
            return False
    return True


def _contributes(clause: str) -> bool:
    """Does the clause say something contributes to the failure or is to blame, not negated ("rate is not at fault",
    "search is not to blame" clear it)?"""
    return any(not _NEGATED_BEFORE.search(clause[max(0, m.start() - 24): m.start()]) for m in _CONTRIBUTES.finditer(clause))


_NEGATED_BEFORE = re.compile(r"\b(?:not|never|no longer|n't|nor|neither)\s+(?:\w+\s+)?$")


_POSSESSIVE_OPENING = re.compile(r"^\W*(?:(?:but|however|yet|though|although)\s+)?(?:its|their)\s+\w", re.I)
# "its setting for (where) the product catalog (lives)", "their connection string to the cart store": the possessed
# thing and a preposition, then the component it is about
_POSSESSED_THING = re.compile(r"^\W*(?:(?:but|however|yet|though|although)\s+)?(?:its|their)\s+(?:[\w'-]+\s+){1,5}?"
                              r"(?:for|to|of|towards?|about|at|on|with)\s+(?:(?:where|what|how)\s+)?(?:the\s+)?$", re.I)


def _possessed_complement(clause: str, mention: text.Mention) -> bool:
    """Is the mention what a possessed thing opening its clause is for ("its setting for the product catalog")?"""
    return bool(_POSSESSED_THING.match(clause[: mention.start]))


# "every service name does not exist" quantifies names; "all services recover" is the fix working
_NOT_BLAME_AFTER = re.compile(
    r"^\s+(?:names?|accounts?|address(?:es)?|ips?|records?|lookups?|calls?|requests?|ports?|endpoints?|urls?|tokens?|"
    r"identit\w*|certificates?|dns|discovery|mesh|queries|traffic)\b"
    r"|^(?:\s+\S+){0,2}\s+(?:recover\w*|(?:are|were|is|came|come|went|go) back|work(?:s|ed)? again|(?:healthy|fine|normal|ok|green) again|"
    r"back to normal|healed|resumed?)\b")


def _blames_everything(blaming: str, phrase: str) -> str | None:
    """An over-broad phrase ("all services") used as the culprit: not a quantifier of another noun, not recovering."""
    pattern = text.phrase_pattern(phrase)
    if pattern is None:
        return None
    for match in pattern.finditer(blaming):
        if _NOT_BLAME_AFTER.match(blaming[match.end():]):
            continue
        found = text.find_phrase(blaming[max(0, match.start() - 40):], phrase)
        if found:
            return found
    return None


_THE_STORE = re.compile(r"\b(?:the|that|this|its)\s+(?:db|database|datastore|postgres|postgresql|mysql|mongodb|redis|cache)\b(?!\s+\w+\s+(?:is|was)\b)")
# the flag service and its configuration name a flag too ("imageSlowLoad is on in flagd-config"; eighth round)
_FLAG_WORDS = re.compile(r"\b(?:flags?|toggles?|feature|switch(?:es)?|flagd(?:-config)?)\b", re.I)
_CAMEL = re.compile(r"\b[a-z]+(?:[A-Z][a-z0-9]+)+\b")
_NOT_FLAGS = frozenset({"defaultvariant", "configmap", "flagd", "nodeselector", "targetport"})


# keys of a truth's values that name an object of the fault (not a setting's value)
_OBJECT_KEYS = re.compile(r"ingress|cronjob|job|daemonset|configmap|secret|webhook|networkpolicy|sidecar|init_container|"
                          r"writer|holder|statefulset|claim|pvc|serviceaccount|priorityclass|hpa|^service$")


# keys naming a place inside a datastore or queue whose name is an ordinary word ("orders"): the fault's own object only
# when named with its kind ("the orders stream"; eighth round)
_CONTAINER_KEYS = frozenset({"stream", "topic", "queue", "table", "bucket", "collection"})


def _object_patterns(truths: Sequence[GroundTruth], components: set[str], *,
                     kinds: bool = True) -> list[tuple[re.Pattern[str], bool]]:
    """The fault's own objects as a diagnosis names them, each marked "shared" when it is a system object other
    faults change too (``kube-system/coredns``, ``kube-system/kube-proxy``, the app's Ingress) rather than one
    the fault added or names alone (``cert-sync``, ``analytics-backfill``). A flag fault is told by its flag,
    not by the flag configuration every flag shares."""
    patterns: list[tuple[re.Pattern[str], bool]] = []
    for t in truths:
        if "flag" in t.mutated_values:
            continue
        for key, value in t.mutated_values.items():
            if str(key).lower() in _PRE_FAULT_KEYS or not (_OBJECT_KEYS.search(str(key).lower())
                                                           or str(key).lower() in _CONTAINER_KEYS):
                continue
            if str(key).lower() in _CONTAINER_KEYS:  # "the orders stream": a stream's name is a word, named with its kind
                for x in _scalars(value):
                    name = text.flatten(str(x)) if isinstance(x, str) else ""
                    if len(name) >= 3 and name not in components:
                        # a stream is also called a topic, a queue or a line ("the orders topic", "the order line")
                        kind = (r"(?:streams?|topics?|queues?|lines?|channels?)" if str(key).lower() in ("stream", "topic", "queue")
                                else rf"{str(key).lower()}s?")
                        named = re.escape(name[:-1]) + "s?" if name.endswith("s") else re.escape(name)
                        patterns.append((re.compile(rf"(?<![a-z0-9]){named}\s+{kind}(?![a-z0-9])|"
                                                    rf"(?<![a-z0-9]){kind}\s+{named}(?![a-z0-9])"), False))
                continue
            for x in _scalars(value):
                name = str(x).rsplit("/", 1)[-1].lower() if isinstance(x, str) else ""
                if len(name) >= 4 and name not in components and re.fullmatch(r"[a-z0-9][a-z0-9.-]*", name):
                    pattern = text.phrase_pattern(name)
                    if pattern is not None:
                        patterns.append((pattern, str(x).startswith("kube-system/")))
        # the app's Ingress, not the controller ("ingress-nginx controller"): the changed object, or the object whose
        # Secret or backend the truth's statement says was changed ("the TLS Secret the app's Ingress serves"; eighth round)
        if t.resource_kind.lower() == "ingress" or re.search(r"\bapp's ingress\b|\bthe ingress\b", t.mechanism, re.I):
            patterns.append((re.compile(r"(?<![a-z0-9])(?<!nginx )ingress(?:es)?(?![a-z0-9])(?!\s+(?:nginx|controller|class\b))"),
                             True))
        # a platform fault's changed object by its kind ("the Calico BGPPeer", "the pod IP pool", "the admission
        # webhook", "the quota", "the kubelet"): the app component is only where such a fault shows (round 23). Shared:
        # the kind says which object, never what was done to it, so a specific statement of the change must be there
        if kinds:
            patterns += [(pattern, True) for pattern in _kind_patterns(t.resource_kind)]
    return patterns


def _kind_only(flat: str, truths: Sequence[GroundTruth], components: set[str]) -> bool:
    """Does a sentence name the fault's objects only by a platform kind (none by its name, no other object)?"""
    return (any(p.search(flat) for t in truths for p in _kind_patterns(t.resource_kind))
            and not any(p.search(flat) for p, _shared in _object_patterns(truths, components, kinds=False)))


def _field_named(flat: str, truths: Sequence[GroundTruth]) -> bool:
    """Does a sentence give one of the truth's fields, by its own compound name (``imageGCLowThresholdPercent``: a
    lowerCamel keyword), a number ("imageGCLowThresholdPercent 90", "... is 90")? A field with its value says what was
    changed, as a kind never does; the field alone ("maxPerCore and min are normal") does not."""
    for t in truths:
        for k in t.keywords:
            pattern = text.phrase_pattern(k) if re.fullmatch(r"[a-z]+(?:[A-Z][A-Za-z0-9]*)+", k) and len(k) >= 8 else None
            for found in pattern.finditer(flat) if pattern else ():
                if re.match(r"\W{0,3}(?:(?:is|was|set\s+to|of|at|to)\s+)?\d", flat[found.end():]):
                    return True
    return False


def _change_said(flat: str, truths: Sequence[GroundTruth], components: set[str]) -> bool:
    """Does a sentence say, beyond the name or kind of the fault's object, what was changed: a specific statement of the
    truth's own words, or one of its fields by name?"""
    if _field_named(flat, truths):
        return True
    for t in truths:
        hit = _truth_hit(_mask_names(flat, components), flat, t, vocabulary(t))
        if hit and not _names_the_object(hit[0], truths, components) and not _kind_said(hit[0], truths) \
                and _specific_statement(hit[0]):
            return True
    return False


def _kind_said(phrase: str, truths: Sequence[GroundTruth]) -> bool:
    """Does a mechanism phrase name the platform object's kind ("kubelet .. stopped", "every node")? It then says what
    the object does or where the fault is (every kubelet exits, all nodes go NotReady: what any of its faults shows),
    not what was changed in it: it cannot localize a sentence that names the object only by that kind."""
    flat = text.flatten(phrase.replace("*", ""))
    return any(p.search(flat) for t in truths for p in _kind_patterns(t.resource_kind))


# kinds of the cluster's own objects, changed by a fault that the app's component only suffers (its pods cannot start,
# its calls time out): a diagnosis names the faulty object by its kind or its name, rarely the component
# (not a NetworkPolicy or a PriorityClass: each is written for, or used by, one workload, which must be named)
_PLATFORM_KINDS = frozenset({"bgppeer", "ippool", "validatingwebhookconfiguration", "mutatingwebhookconfiguration",
                             "resourcequota", "node"})
# the last word of a kind that only says it is a setting ("...WebhookConfiguration"): the word before it is the thing
_KIND_SUFFIXES = frozenset({"configuration", "class"})


@functools.lru_cache(maxsize=64)
def _kind_patterns(kind: str) -> tuple[re.Pattern[str], ...]:
    """How a diagnosis names a platform object by its kind: the kind as one word or as its parts ("BGPPeer", "bgp
    peer", "IPPool", "ip pool", "ValidatingWebhookConfiguration", "validating webhook"), its head noun ("webhook",
    "quota", "pool") and the kind's terms (``lexicon.KIND_TERMS``: a node is also "the kubelet" that runs it)."""
    if kind.lower() not in _PLATFORM_KINDS:
        return ()
    parts = [w.lower() for w in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+", kind)]
    if len(parts) > 2 and parts[-1] in _KIND_SUFFIXES:
        parts = parts[:-1]
    head = [parts[-1]] if len(parts) > 1 and parts[-1] not in _KIND_SUFFIXES else []
    names = {kind.lower(), "".join(parts), " ".join(parts), *head, *lexicon.KIND_TERMS.get(kind.lower(), ())}
    out = []
    for name in sorted(names):
        body = r"[\s-]?".join(re.escape(w) for w in name.split())
        if len(name) >= 4:
            out.append(re.compile(rf"(?<![a-z0-9]){body}(?:s|es)?(?![a-z0-9])"))
    return tuple(out)


def _object_sentences(sentences: Sequence[reading.Sentence], truths: Sequence[GroundTruth], components: set[str],
                      about: Mapping[int, set[str]], involved: set[str]) -> dict[int, bool]:
    """The asserted sentences naming one of the fault's own objects, in a diagnosis that names no other component
    of the app as a culprit anywhere ("Root cause in frontend: ... default-deny-ingress" localizes frontend, not the
    fault), each with whether only shared system objects were named there."""
    patterns = _object_patterns(truths, components)
    if not patterns or any(named - involved for named in about.values()):
        return {}
    # a component the fault involves (the consumers a poison record blocks) called defective is blamed as the cause: the
    # object is then its victim ("buggy consumers crash and corrupt the orders topic")
    truth_components = {c.lower() for t in truths for c in t.components}
    if any(named - truth_components and _DEFECTIVE.search(sentences[index].flat)
           for index, named in about.items() if index < len(sentences)):
        return {}
    system_objects = {str(x).rsplit("/", 1)[-1] for t in truths for x in _scalars(dict(t.mutated_values))
                      if isinstance(x, str) and x.startswith("kube-system/")}
    ingress = any(t.resource_kind.lower() == "ingress" or re.search(r"\bapp's ingress\b|\bthe ingress\b", t.mechanism, re.I)
                  for t in truths)
    out: dict[int, bool] = {}
    for s in sentences:
        if s.hedged or about.get(s.index, set()) - involved:
            continue
        shared = [system for pattern, system in patterns if pattern.search(s.flat)]
        # a system object described by what it is ("the cluster's name server" for kube-system/coredns), by the glosses
        # of the concept its name is (eighth round)
        shared += [True for name in system_objects if concepts.gloss_spans(s.flat, name)]
        # the app's Ingress described by a word of its concept ("the website's entry rule", "the front door rule", "the
        # entrance rule"): a newcomer's name for it, shared as the word "ingress" is (what was changed must be said too)
        if ingress and any(concept == "ingress" and flat_word != "ingress" for concept, flat_word in
                           ((c, s.flat[b:e]) for c, b, e in concepts.concepts(s.flat))):
            shared.append(True)
        if shared:
            out[s.index] = all(shared)
    return out


_DEFECTIVE = re.compile(r"\b(?:buggy|bugs?|defect\w*|faulty|misbehav\w*)\b")


def _names_the_object(phrase: str, truths: Sequence[GroundTruth], components: set[str]) -> bool:
    """Is a mechanism phrase only the name or the kind of one of the fault's objects?"""
    flat = text.flatten(phrase.replace("*", ""))
    return _is_object_word(phrase) or any(p.fullmatch(flat) for p, _shared in _object_patterns(truths, components))


def _specific_statement(phrase: str) -> bool:
    """Does a mechanism phrase say what was changed, beyond one plain word ("nxdomain")? A phrase of several
    words, a compound field name (``ingressClassName``), a value or the mechanism's concepts."""
    return (phrase.startswith(("concepts:", "value ", "setting ", "option ")) or " " in phrase.strip()
            or len(phrase.strip(" *")) >= 12)


def _pasted_components(pasted: str, components: Iterable[str]) -> set[str]:
    """The components pasted tool output names (pod names, ``-l app=...``)."""
    if not pasted:
        return set()
    lowered = text.normalize(pasted)
    return {c for c in components if text.component_pattern(c).search(lowered)}


def _decoy_instead(sentences: Sequence[reading.Sentence], truths: Sequence[GroundTruth]) -> tuple[str, str] | None:
    """(fault, decoy) when a flag fault's flag is never named but another flag is: one of the truth's
    ``decoys``, a name of the same shape (``tt-feat-18`` for ``tt-feat-22``), or, next to the word
    flag/toggle, another camelCase flag name (``paymentUnreachable`` for ``paymentFailure``)."""
    asserted = [s for s in sentences if not s.hedged]
    flat = " . ".join(s.flat for s in asserted)
    for t in truths:
        flag = t.mutated_values.get("flag")
        if not isinstance(flag, str) or not flag:
            continue
        spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", flag)
        decoys = [str(d) for d in t.mutated_values.get("decoys") or () if isinstance(d, str)]
        # the flag named only in a listing of several flags ("(tt-feat-5, tt-feat-15, tt-feat-3 on)") is not named as the
        # cause: the listing says what was seen (eighth round)
        named = _outside_flag_listings(flat, flag, decoys)
        if text.find_phrase(named, flag, allow_negated=True) or text.find_phrase(named, spaced, allow_negated=True):
            continue
        for decoy in decoys:
            if text.find_phrase(flat, decoy, allow_negated=True):
                return t.fault, decoy
        if re.fullmatch(r"[a-z]+(?:-[a-z]+)*-\d+", flag):
            shape = re.compile(r"(?<![\w-])" + re.escape(text.flatten(re.sub(r"\d+$", "", flag))) + r"\s*(\d+)(?![\w-])")
            other = shape.search(flat)
            if other:
                return t.fault, other.group(0)
        for s in asserted:
            if not _FLAG_WORDS.search(s.raw):
                continue
            for name in _CAMEL.findall(s.raw):
                if name.lower() not in _NOT_FLAGS and name.lower() != flag.lower():
                    return t.fault, name
    return None


_LIST_SEPARATOR = re.compile(r"\s*(?:,|;|/|&|\+|,?\s*\b(?:and|as well as|plus)\b)\s*(?:the\s+)?")


def _only_enumerated(clause_list: Sequence[text.Clause], clause_sentence: Sequence[int], sentences: Sequence[reading.Sentence],
                     mentions: Sequence[text.Mention], truth_components: set[str], involved: set[str]) -> dict[str, set[str]]:
    """The faulty components every asserted mention of which is an item of an enumeration of three components or more
    (names joined only by commas, "and", "/"), two of them or more not involved in the fault, each with the names of
    its (largest) enumeration."""
    listed: dict[tuple[int, int], set[str]] = {}
    by_clause: dict[int, list[text.Mention]] = {}
    for m in mentions:
        by_clause.setdefault(m.clause, []).append(m)
    for index, found in by_clause.items():
        found = sorted(found, key=lambda m: m.start)
        runs: list[list[text.Mention]] = [[found[0]]]
        for previous, m in zip(found, found[1:], strict=False):
            between = clause_list[index].text[previous.end:m.start]
            if _LIST_SEPARATOR.fullmatch(between) and m.component != previous.component:
                runs[-1].append(m)
            else:
                runs.append([m])
        for run in runs:
            names = {m.component for m in run}
            if len(names) >= 3 and len(names - involved) >= 2 and names & truth_components:
                listed.update({(m.clause, m.start): names for m in run})
    out: dict[str, set[str]] = {}
    for c in truth_components:
        own = [m for m in mentions if m.component == c and not sentences[clause_sentence[m.clause]].hedged]
        if own and all((m.clause, m.start) in listed for m in own):
            out[c] = max((listed[(m.clause, m.start)] for m in own), key=len)
    return out


def _carried_by_identity(flat: str, truths: Sequence[GroundTruth]) -> set[str]:
    """The faulty components whose name is part of an identifying value named in the sentence (``ad`` in
    ``adFailure``, ``product-catalog`` in ``productCatalogFailure``)."""
    out = set()
    for t in truths:
        for value in identifying_values(t):
            forms = [text.flatten(form) for form in renderings(value)]
            if not any(re.search(rf"(?<![a-z0-9]){re.escape(form)}(?![a-z0-9])", flat) for form in forms):
                continue
            out |= {c.lower() for c in t.components
                    if any(re.search(rf"(?<![a-z0-9]){re.escape(text.flatten(c))}(?![a-z0-9])", form) for form in forms)}
    return out


def identifying_values(truth: GroundTruth) -> list[str]:
    """The values that identify the fault among its siblings (the mutated values under its ``identified_by`` keys)."""
    keys = getattr(truth, "identified_by", ()) or ()
    return [str(v) for k in keys for v in _scalars(truth.mutated_values.get(k)) if str(v).strip()]


# a switch said to be in its on state: "was left on", "is on", "flag: on", "(on)", "enabled", "active", "set to 100%"
_ON_STATE = re.compile(r"(?:\b(?:is|was|were|are|been|left|turned|switched|flipped|set|stays?|still|now|got)\s+on\b|[:=]\s*[\"']?on\b"
                       r"|\(on\)|\bon\s*[),;]|\benabled\b|\bactivated?\b|\bactive\b|\bset\s+to\s+(?:true|100\s?%)|\b100\s?%)")


def _identity_in_state(flat: str, truth: GroundTruth) -> tuple[str, tuple[int, int]] | None:
    """For a truth told from its siblings by one value (``identified_by``: a flag's name), that value named in the sentence
    and said to be in its fault state ("a test switch ... (adFailure) was left on", "paymentFailure ... set to 100%"):
    the switch and what was done to it, which is the whole of such a fault. Not when either is negated ("adFailure is
    not on", "no longer enabled") or the state is the opposite (:func:`_opposite_state` runs after)."""
    if not _switched_on(truth):
        return None
    state = _ON_STATE.search(flat)
    if state is None or reading.negated(flat, state.start(), state.end()) \
            or re.search(r"\b(?:not|no longer|never|n't)\s+(?:\w+\s+)?(?:on|enabled|active)\b", flat):
        return None
    for value in identifying_values(truth):
        for form in renderings(value):
            named = reading.find_pattern(flat, re.escape(form.lower()), allow_negated=True)
            if named:
                return f"value {value} on", (min(named[0], state.start()), max(named[1], state.end()))
    return None


def renderings(value: str) -> list[str]:
    """How a diagnosis may write an identifying value unambiguously: as is, camelCase spaced (``ad failure`` for
    ``adFailure``), hyphens and underscores as spaces (``tt feat 12``)."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", value)
    out = [value, spaced, re.sub(r"[-_]+", " ", spaced)]
    pair = re.fullmatch(r"(\d+)\s+(\d+)", value.strip())
    if pair:  # a range of two numbers ("32000 32003") is written "32000 to 32003" as often
        out.append(f"{pair.group(1)} to {pair.group(2)}")
    return list(dict.fromkeys(o for o in out if o.strip()))


_SWITCH_WORD = re.compile(r"(?:flags?|switch(?:es)?|toggles?|flagd)")
_DESCRIBING = frozenset({"that", "which", "for", "to", "of", "making", "named", "called", "makes", "whose"})


def _described(words: Sequence[str], flat: str) -> bool:
    """Is a name of several words (``failedReadinessProbe``) said by its words where they say which switch it is: before
    the switch word ("the 'fail readiness' switch", "the slow-image-loading flag") or in what follows it to describe it
    ("the switch that makes the ad service fail")? Every word of a name of two words, all but one of a longer one; a
    word of four letters or more may be inflected ("failure", "loading", "catalogue"). "A flag was switched on and ad
    fails" does not say which flag."""
    tokens = re.findall(r"[a-z0-9]+", flat)

    def said(word: str, near: Sequence[str]) -> bool:
        if len(word) <= 3:
            return word in near or word + "s" in near
        need = max(4, len(word) - 3)
        return any(len(t) >= 4 and len(os.path.commonprefix([word, t])) >= min(need, len(t)) for t in near)

    needed = len(words) if len(words) <= 2 else len(words) - 1
    for i, token in enumerate(tokens):
        if not _SWITCH_WORD.fullmatch(token):
            continue
        near = tokens[max(0, i - 5):i]
        if i + 1 < len(tokens) and tokens[i + 1] in _DESCRIBING:
            near = [*near, *tokens[i + 1:i + 10]]
        if sum(1 for w in words if said(w, near)) >= needed:
            return True
    return False


def _json_values(submission: str) -> set[str]:
    """The string values of a diagnosis that is one JSON object (a record's ``"flag": "adFailure"``)."""
    try:
        data = json.loads(submission.strip())
    except ValueError:
        return set()
    out: set[str] = set()

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                visit(v)
        elif isinstance(value, list):
            for v in value:
                visit(v)
        elif isinstance(value, str):
            out.add(value.strip().lower())

    visit(data)
    return out


def _ports_of(truth: GroundTruth) -> tuple[set[str], set[str], set[str]]:
    """The ports a truth's change records before and after it (an address's port, ``host:8082``; a port field's
    number) and the hosts of its addresses."""
    before: set[str] = set()
    after: set[str] = set()
    hosts: set[str] = set()
    values = truth.mutated_values
    records = [("", values)] + [(str(k), v) for k, v in values.items() if isinstance(v, Mapping)]
    for key, record in records:
        portish = "port" in key.lower() or "port" in str(values.get("field", "")).lower()
        for when, out in (("before", before), ("after", after)):
            value = record.get(when)
            if isinstance(value, bool) or value is None or isinstance(value, Mapping | list):
                continue
            address = re.fullmatch(r"([a-z][\w.-]*):(\d{2,5})", str(value).strip(), re.I)
            if address:
                out.add(address.group(2))
                hosts.add(text.flatten(address.group(1)))
            elif portish and re.fullmatch(r"\d{2,5}", str(value).strip()):
                out.add(str(value).strip())
    return before, after, hosts


def _other_port(flat: str, truth: GroundTruth) -> bool:
    """Does the sentence give the changed address or port another port than the fault set ("points at
    product-catalog:3551" for 8082, "targetPort 9999" for 9091), never writing the fault's? (red-team round 14,
    finding 5: the variable's name counted as the value)"""
    before, after, hosts = _ports_of(truth)
    if not after:
        return False
    claimed = {m.group(1) for m in re.finditer(r"\b(?:target\s*port|port)\s*(?:is\s+|of\s+|to\s+|number\s+|[:=]\s*)?(\d{2,5})\b", flat)}
    for host in hosts:
        claimed |= {m.group(1) for m in re.finditer(rf"(?<![a-z0-9]){re.escape(host)}\s*:\s*(\d{{2,5}})\b", flat)}
    if not claimed or claimed & after:
        return False
    return bool(claimed - before)


def _image_tags(truth: GroundTruth) -> tuple[str, set[str], str] | None:
    """(repository, its tags before and after, the tag set) of a truth that changed a container image, else None."""
    for key, record in truth.mutated_values.items():
        if "image" not in str(key).lower() or not isinstance(record, Mapping):
            continue
        after, before = str(record.get("after") or ""), str(record.get("before") or "")
        if ":" not in after:
            continue
        repository, tag = after.rsplit(":", 1)
        tags = {tag} | ({before.rsplit(":", 1)[1]} if ":" in before else set())
        return repository.lower(), {t.lower() for t in tags}, tag.lower()
    return None


def _other_image(raw: str, truth: GroundTruth) -> bool:
    """Does the sentence give the changed image another tag than the fault set ("changed to ...:2.0-broken" for
    ``v9.9.9-missing``), never writing the fault's? (red-team round 15, finding 9: a wrong value passed where it was not
    a port)"""
    image = _image_tags(truth)
    if image is None:
        return False
    repository, tags, tag = image
    lowered = raw.lower()
    if re.search(rf"(?<![\w.-]){re.escape(tag)}(?![\w-])", lowered):
        return False
    name = repository.rsplit("/", 1)[-1]
    claimed = {m.group(2) for m in re.finditer(r"([\w.-]+(?:/[\w.-]+)*):([\w][\w.-]*)", lowered)
               if m.group(1).rsplit("/", 1)[-1] == name}
    # "tag 2.0-broken": a version-like word (with a digit) after "tag", not "the tag ts-travel-service points at"
    claimed |= {m.group(1).rstrip(".") for m in re.finditer(
        r"\b(?:image\s+)?tag\s+(?:(?:was|is|has\s+been|got)\s+)?(?:(?:changed|set|updated|bumped|moved|rolled)\s+)?(?:to\s+)?"
        r"[`'\"]?([\w][\w.-]*)", lowered)
                if re.search(r"\d", m.group(1))}
    return bool(claimed - tags)


# a percentage as written: "50%", "10 %", "10 percent"; not "40% of requests" (a share the writer measured, not the
# value a setting was given)
_PERCENT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:%|percent\b)(?!\s*of\b)")


def _truth_percents(value: Any) -> set[float]:
    """Every percentage the fault set (``defaultVariant: 100%``), never one it replaced (``before``)."""
    found: set[float] = set()
    if isinstance(value, Mapping):
        for key, item in value.items():
            if str(key).lower() not in ("before", "baseline", "original", "previous", "old", "decoys"):
                found |= _truth_percents(item)
    elif isinstance(value, list | tuple):
        for item in value:
            found |= _truth_percents(item)
    elif isinstance(value, str):
        found |= {float(m.group(1)) for m in _PERCENT.finditer(value.lower())}
    return found


def _other_percent(flat: str, truth: GroundTruth) -> bool:
    """Does the sentence give the fault's setting another percentage than the one it was set to ("paymentFailure is
    set to 50%" for a flag at 100%), never writing the fault's? A flag at a small share and one failing every request
    are different faults with different effects (round 25: the right object, a wrong value)."""
    wanted = _truth_percents(truth.mutated_values)
    if not wanted:
        return False
    said = {float(m.group(1)) for m in _PERCENT.finditer(flat)}
    return bool(said) and not said & wanted


_SIGNAL = re.compile(r"\b(?:memory|nodefs|imagefs|containerfs|pid)\.(?:available|inodesfree)\b")


def _other_signal(flat: str, truth: GroundTruth) -> bool:
    """Does the sentence name an eviction signal ("memory.available") where the truth's is another one
    ("nodefs.available"), never the truth's? The same threshold of another resource is another fault."""
    wanted = set(_SIGNAL.findall(text.flatten(f"{truth.mechanism} {truth.prose}")))
    said = set(_SIGNAL.findall(flat))
    return bool(wanted) and bool(said) and not said & wanted


def _other_quantity(flat: str, truth: GroundTruth) -> bool:
    """Does the sentence set the changed size or duration to another amount than the fault did ("lowered to 64Mi" for a
    12Mi limit), never writing the fault's? Only an amount said as what something was set to ("to", "at", "is", "=",
    ":") counts: "its usual 256Mi" or a measured usage is no claim of the new value (red-team round 15, finding 9)."""
    # the truth's amounts written with their unit ("12Mi", "1500ms"), not a bare number under a key that reads as one
    # ("min: 32" of a conntrack setting is no 32 minutes)
    wanted = [w for w in quantity.truth_quantities(truth.mutated_values) if not re.fullmatch(r"-?\d+(?:\.\d+)?", w[0])]
    if not wanted or quantity.find_quantity(flat, truth.mutated_values):
        return False
    dimensions = {dimension for _value, dimension, _size in wanted}
    for _written, dimension, _size, start, _end in quantity.text_quantities(flat):
        if dimension in dimensions and re.search(r"(?:\bto|\bat|\bis|\bof|=|:)\s*(?:only\s+|just\s+)?$", flat[max(0, start - 12):start]):
            return True
    return False


def _unchanged_field_blamed(flat: str, truth: GroundTruth) -> bool:
    """Does the sentence call a field of the changed record wrong that the change kept as it was ("the wrong port" of a
    probe whose path changed), without naming any field that did change?"""
    values = truth.mutated_values
    records = [values] + [v for v in values.values() if isinstance(v, Mapping)]
    kept: set[str] = set()

    def leaves(value: Any, out: set[str]) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(item, Mapping | list):
                    leaves(item, out)
                else:
                    out.add(str(key))
        elif isinstance(value, list):
            for item in value:
                leaves(item, out)

    for record in records:
        if isinstance(record.get("before"), Mapping) and isinstance(record.get("after"), Mapping):
            leaves(record["before"], kept)
    changed = set(_differing_fields(truth))
    kept -= changed
    if not kept or not changed:
        return False
    said = lambda field: re.search(rf"(?<![a-z0-9]){re.escape(text.flatten(concepts.split_compounds(field)))}s?(?![a-z0-9])", flat)
    if any(said(field) for field in changed):
        return False
    return any(re.search(rf"\b(?:wrong|incorrect|bad|invalid|different|mistyped|changed)\s+(?:[a-z]+\s+)?"
                         rf"{re.escape(text.flatten(concepts.split_compounds(field)))}s?\b", flat) for field in kept)


def _field_name_only(details: Mapping[str, tuple[str, str]], truths: Sequence[GroundTruth],
                     sentences: Sequence[reading.Sentence]) -> list[str]:
    """The faults of a changed field (a ``{field, before, after}`` record) whose mechanism was read only from the
    field's name ("runAsUser", "updateStrategy") in a sentence that says nothing else of what the truth says was
    done ("is negative", "does not exist"), while no sentence gives the value it was set to or the one it replaced:
    "it has an invalid runAsUser" says which field, not what it was set to; every fault of that field fits it."""
    out = []
    everything = " . ".join(s.flat for s in sentences if not s.hedged)
    for t in truths:
        if t.fault not in details or not _before_after_pairs(t):
            continue
        phrase = text.flatten(str(details[t.fault][0]).replace("*", "")).replace(" ", "")
        leaves = _differing_fields(t)
        if phrase not in {text.flatten(leaf).replace(" ", "") for leaf in leaves}:
            continue
        if any(_written(everything, v, allow_negated=True) for pair in _before_after_pairs(t) for v in pair):
            continue
        if _relative_change(everything, t):  # "moved up by 10": the change, by how much
            continue
        # what the truth's cause part says beyond its objects' and fields' names ("negative", "does not exist")
        cause = (concepts.split_effect(t.mechanism) or (t.mechanism,))[0].split(";")[0]
        naming = " ".join([*leaves, *(_changed_field for _changed_field, _a in _changed_fields(t)),
                           t.resource_kind, str(t.mutated_values.get("resource", ""))])
        named = {c for c, _span in concepts.present(text.flatten(concepts.split_compounds(naming)), cause)}
        sentence = text.flatten(details[t.fault][1])
        if any(c not in named for c, _span in concepts.present(sentence, cause)):
            continue
        out.append(t.fault)
    return out


def _differing_fields(truth: GroundTruth) -> list[str]:
    """The names of the fields whose value a change record's ``before`` and ``after`` differ in (the leaf:
    ``runAsUser`` inside ``spec.securityContext``), with the record's own field."""
    values = truth.mutated_values
    out = [re.split(r"[.\[\]]", str(values.get("field", "")))[-1]] if values.get("field") else []

    def visit(before: Any, after: Any, name: str) -> None:
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            for key in before.keys() & after.keys():
                visit(before[key], after[key], str(key))
        elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
            for b, a in zip(before, after, strict=True):
                visit(b, a, name)
        elif before != after and name:
            out.append(name)

    visit(values.get("before"), values.get("after"), out[0] if out else "")
    for key, record in values.items():  # a field whose value is a {before, after} pair ("readinessProbe": {...})
        if isinstance(record, Mapping) and "before" in record and "after" in record:
            visit(record["before"], record["after"], str(key))
    return [leaf for leaf in dict.fromkeys(out) if leaf]


def _identity_unnamed(sentences: Sequence[reading.Sentence], truths: Sequence[GroundTruth], submission: str = "") -> list[str]:
    """The faults whose identifying value (``GroundTruth.identified_by``) no asserted sentence names: as written, in one
    of its renderings, a JSON record's value, or, for a name of several words, by its words in a sentence about a
    flag or switch. A flag named only in a listing of several flags is not named as the cause."""
    asserted = [s for s in sentences if not s.hedged]
    flat = " . ".join(s.flat for s in asserted)
    record = _json_values(submission)
    out = []
    for t in truths:
        values = identifying_values(t)
        if not values:
            continue
        decoys = [str(d) for d in t.mutated_values.get("decoys") or () if isinstance(d, str)]
        if any(text.find_phrase(_outside_flag_listings(flat, v, decoys), r, allow_negated=True)
               for v in values for r in renderings(v)):
            continue
        if any(v.lower() in record for v in values):
            continue
        worded = [re.sub(r"(?<=[a-z])(?=[A-Z])", " ", v).lower().split() for v in values]
        if any(len(w) >= 2 and all(x.isalpha() for x in w) and _described(w, s.flat)
               for w in worded for s in asserted):
            continue
        out.append(t.fault)
    return out


def _outside_flag_listings(flat: str, flag: str, decoys: Sequence[str]) -> str:
    """The text with every listing of three flags or more blanked: a segment between brackets or stops that names the
    truth's flag with two other flags (its decoys, or names of the same shape: ``tt-feat-15`` beside ``tt-feat-5``)."""
    base = text.flatten(re.sub(r"\d+$", "", flag)) if re.fullmatch(r"[a-z]+(?:-[a-z]+)*-\d+", flag) else ""
    others = [re.escape(text.flatten(d)) for d in decoys if d != flag]
    if base:
        others.append(re.escape(base) + r"\s*\d+")
    if not others:
        return flat
    other = re.compile(r"(?<![\w-])(?:" + "|".join(others) + r")(?![\w-])")

    def blank(segment: re.Match[str]) -> str:
        found = [m.group(0) for m in other.finditer(segment.group(0))]
        own = text.find_phrase(segment.group(0), flag, allow_negated=True)
        mentions = len([f for f in found if f.replace(" ", "") != text.flatten(flag).replace(" ", "")])
        return re.sub(r"\S", "#", segment.group(0)) if own and mentions >= 2 else segment.group(0)

    return re.sub(r"[^().;:]+", blank, flat)


# "the variable that tells preserve where ts-order-service is, ..., was removed": a name inside a relative
# clause describes the subject; the predicate after it is not said of that name
_RELATIVE_BEFORE = re.compile(
    r"\b(?!(?:is|was|are|were|be|been|so|now|and|but|says?|said|shows?|showed|means?|meant|think|thinks|found|see|saw|"
    r"note|notes|seems?|sure|than|such|fact|cause|reason|problem|issue|just|only|given|because|except|confirmed|"
    r"confirms?|verified|know|knew|assume|believe|shows)\b)[a-z]+\s+(?:that|which|who|whose)\s+\S+(?:\s+\S+){0,4}\s+$"
    r"|\b(?:where|whom)\s+$")


def _in_relative_clause(clause: str, mention: text.Mention) -> bool:
    """Is this mention inside a relative clause before the main predicate (a blame cue after it)?"""
    return bool(_RELATIVE_BEFORE.search(clause[: mention.start]) and text.BLAME_CUES.search(clause[mention.end :]))


def _near_miss(sentences: Sequence[reading.Sentence], truths: Sequence[GroundTruth],
               components: Iterable[str]) -> tuple[str, str] | None:
    """(fault, name) when a hyphenated object name of the fault ("default-deny-ingress") is never named but a
    name of the same shape differing in one part is ("default-deny-egress"): the diagnosis is about another
    object."""
    written = " . ".join(text.normalize(s.raw) for s in sentences if not s.hedged)
    names = {c.lower() for c in components}
    for t in truths:
        own = {str(v).lower() for v in _scalars(dict(t.mutated_values))} | {v.lower() for v in concrete_values(t)}
        for value in concrete_values(t):
            lowered = value.lower()
            if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+){2,}", lowered) or lowered in names:
                continue
            if re.search(rf"(?<![\w-]){re.escape(lowered)}(?![\w-])", written):
                continue
            parts = lowered.split("-")
            for i, part in enumerate(parts):
                body = "-".join(re.escape(p) if j != i else rf"(?!{re.escape(part)}(?![\w]))[a-z0-9]+" for j, p in enumerate(parts))
                other = re.search(rf"(?<![\w-]){body}(?![\w-])", written)
                if (other and other.group(0) not in names | own  # the fault's other objects are its own
                        and not any(text.component_pattern(c).fullmatch(other.group(0)) for c in names)):  # "frontend-proxy-svc"
                    return t.fault, other.group(0)
    return None


_APPOSITION = re.compile(r"^\s*,\s*(?:the|a|an|its|their)\b[^,;:.]*$")


def _in_apposition(clause_list: Sequence[text.Clause], mentions: Sequence[text.Mention], mention: text.Mention) -> bool:
    """Is the mention inside an apposition describing another component named just before it ("memcached-profile,
    the cache in front of profile, lost its packets": profile only describes memcached-profile)?"""
    clause = clause_list[mention.clause].text
    before = [m for m in mentions if m.clause == mention.clause and m.end <= mention.start and m.component != mention.component]
    return bool(before) and bool(_APPOSITION.match(clause[before[-1].end:mention.start]))


def _identifies(clause_list: Sequence[text.Clause], mentions: Sequence[text.Mention], mention: text.Mention,
                involved: set[str] | frozenset[str] = frozenset()) -> bool:
    """Does this mention point at the component as the problem? Cause and plain clauses do; an
    effect clause does too when its cause names no component ("geo crashes because of a bad key"),
    or names only what the fault itself involves ("the paymentFailure flag that flagd serves was
    switched on, so payment fails": flagd serves the faulty component's flag, it is not blamed)."""
    clause = clause_list[mention.clause]
    if clause.identifies:
        return True
    if clause.role != "effect":
        return False
    partners = [i for i, c in enumerate(clause_list) if c.group == clause.group and c.cause_side]
    return bool(partners) and not any(m.clause in partners and m.component not in involved for m in mentions)


_ALTERNATIVE = re.compile(
    r"^[\s,(]*(?:or|and/or|or maybe|or perhaps|or possibly|vs\.?|versus)(?:\s+(?:for|in|on|of|the|at|with|to))*[\s,)]*$"
)


_SUBJECT_AFTER = re.compile(r"(?:'s)?\s+(?:is|was|were|are|has|had|got|gets)\b")
# "no errors from geo or rate", "home-timeline cannot resolve post-storage or social-graph": "or" after a
# negation means neither, it offers no alternative
_NEGATED_LIST = re.compile(r"\b(?:no|not|neither|nor|without|never|cannot|unable to|fails? to|failed to)\b")


# a preposition of direction or company right before the first of two components joined by "or": the components are
# where something goes or whom it concerns ("a call to geo or rate is slow", "requests from A or B"), not candidate
# causes ("the fault is in geo or rate", "caused by geo or rate" still hedge)
_TOWARD = re.compile(r"(?<!\bdue )(?<!\bowing )(?<!\brelated )(?<!\battributed )(?<!\bpoints )(?<!\bpointing )(?<!\btraced )"
                     r"(?<!\bback )(?<!\bcomes )(?<!\bcome )(?<!\bstems )(?<!\bstem )"
                     r"\b(?:to|from|towards?|against|between)\s+(?:the\s+|its\s+|their\s+)?$")


def _mark_alternatives(sentences: list[reading.Sentence], clause_list: Sequence[text.Clause], clause_sentence: Sequence[int],
                       mentions: Sequence[text.Mention]) -> list[reading.Sentence]:
    """A sentence offering components as alternatives ("rate or geo") hedges."""
    hedged = set()
    for first, second in zip(mentions, mentions[1:], strict=False):
        clause = clause_list[first.clause].text
        if (first.clause == second.clause and _ALTERNATIVE.match(clause[first.end : second.start])
                and not _NEGATED_LIST.search(clause[: first.start])  # "no errors from geo or rate" is no hedge
                and not _TOWARD.search(clause[: first.start])):  # "a call to geo or rate": where calls go, not a cause
            hedged.add(clause_sentence[first.clause])
    return [attrs.evolve(s, hedged=True) if s.index in hedged else s for s in sentences]


def _asserts_a_fault(clause: str) -> bool:
    """Does a clause say something is broken (a blame cue or any mechanism), not merely a symptom?"""
    if text.BLAME_CUES.search(clause):
        return True
    flat = text.flatten(clause)
    if _BROKEN_STATE.search(flat):
        # a fault of another kind than a changed setting, said as the state of something ("rate's connection pool is
        # exhausted", "orders has a memory leak"): something is broken, though no mechanism of the table names it (judge
        # round 26, SECURITY.md §26); what something does to another ("checkout overloads the stream") is not its state
        return True
    return any(_match_any(flat, patterns) for patterns in lexicon.MECHANISMS.values())


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [s for k, v in value.items() if str(k).lower() not in _PRE_FAULT_KEYS for s in _scalars(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _scalars(v)]
    return [value]


def vocabulary(truth: GroundTruth) -> tuple[str, ...]:
    """The mechanism vocabulary of a fault: its own (from its spec) united with what the judge reads
    it by without one (:func:`base_vocabulary`). A fault's own vocabulary only ever *adds* phrases."""
    return tuple(dict.fromkeys((*_saying_vocabulary(truth.vocabulary, truth.symptoms, truth.mechanism),
                                *base_vocabulary(truth))))


_GENERIC_STEMS = frozenset(concepts.stem(w) for w in lexicon.GENERIC_WORDS)
# the words of an entry that say nothing of what was done: negation, existence, finding, function words
_EMPTY_WORDS = frozenset("does do did is are was were not no never such the a an any exist exists found".split())


@functools.lru_cache(maxsize=1024)
def _saying_vocabulary(entries: tuple[str, ...], symptoms: tuple[str, ...], mechanism: str = "") -> tuple[str, ...]:
    """A fault's own vocabulary, less the entries that say what one observes rather than what was done: one of the
    fault's own symptoms ("StatefulSetRejected", "ProvisioningFailed", "ImagePullBackOff"), a symptom or a generic word
    the judge knows ("rejected", "Pending", "replicas"), a bare value ("-1", "100000": values are read as values), or
    only a negation of existence ("does not exist", "not found": of what?), or only the name of a thing
    ("datastorecluster", "toleration": :func:`_names_an_object`), unless the fault's own statement says it (CoreDNS
    *answering* NXDOMAIN is that fault's mechanism, not only what one sees). Such an entry would pass a symptom-only
    answer, or another fault's, for this one; the fault's other entries, its statement and its values still read it."""
    own = [text.flatten(x) for x in symptoms]
    # what the statement says was done: its cause part; what it says follows (": the ConfigMap stays Terminating",
    # "(Insufficient cpu)") is what one observes, and an entry only it says is a symptom
    parts = concepts.split_effect(mechanism)
    stated = text.flatten(re.sub(r"\([^)]*\)", " ", parts[0] if parts else mechanism))
    kept = []
    for entry in entries:
        flat = text.flatten(entry)
        words = flat.split()
        said = bool(words) and bool(re.search(rf"(?<![a-z0-9]){re.escape(flat)}(?![a-z0-9])", stated))
        symptom = not said and (
            any(flat == o or flat in o.split(" , ") for o in own)
            or any(re.fullmatch(r"[a-z0-9 ]*", o) and re.search(rf"(?<![a-z0-9]){re.escape(flat)}(?![a-z0-9])", o)
                   and len(words) == 1 for o in own)
            or (len(words) == 1 and bool(_match_any(flat, lexicon.SYMPTOMS))))
        if symptom or (not words or flat in lexicon.GENERIC_WORDS
                or (len(words) == 1 and concepts.stem(flat) in _GENERIC_STEMS)  # "scaled", "deleted"
                or re.fullmatch(r"-?[\d.]+", flat) or all(w in _EMPTY_WORDS for w in words)
                or ((not said or len(words) == 1) and _names_an_object(entry))
                # "<object> .. changed": that a thing changed says nothing of what was done to it (red-team round 11:
                # "the cluster DNS was changed and now breaks <t>" passed both DNS problems)
                or _CHANGED_ONLY.fullmatch(flat)):
            continue
        kept.append(entry)
    return tuple(kept)


_CHANGED_ONLY = re.compile(r"(?:\S+ ){1,3}\.\. (?:changed?|modified|edited|altered|updated|tampered\w*)")


def base_vocabulary(truth: GroundTruth) -> tuple[str, ...]:
    """What the judge reads a fault's mechanism by without the fault's own vocabulary: the fallback
    table, else the truth's specific keywords (generic words such as "port" or "image" never count
    alone); when there is neither, most of the words of the truth's own mechanism. The mechanism
    phrase itself, word for word, always counts (:func:`_mechanisms`)."""
    table = lexicon.MECHANISMS.get(truth.fault, ())
    if table:
        return table
    return _specific_keywords(truth.fault, truth.keywords, truth.symptoms)


@functools.lru_cache(maxsize=1024)
def _specific_keywords(fault: str, keywords: tuple[str, ...], symptoms: tuple[str, ...]) -> tuple[str, ...]:
    """The keywords that say what this fault did: not generic, not a symptom ("OOMKilled", "Pending"
    are what one observes), not the name of a thing, and not a single word that is another fault's
    mechanism too ("nodeSelector" is as much a node-selector fault's)."""
    symptoms = (*lexicon.SYMPTOMS, *symptoms)
    kept = []
    for k in keywords:
        flat = text.flatten(k)
        if flat in lexicon.GENERIC_WORDS or len(k) < 4 or _match_any(flat, symptoms) or _names_an_object(k):
            continue
        if " " not in flat and any(_match_any(flat, patterns) for family, patterns in lexicon.MECHANISMS.items()
                                   if family != fault):
            continue
        kept.append(k)
    return tuple(kept)


def _names_an_object(keyword: str) -> bool:
    """Does a keyword only name a thing (a plain noun: "Ingress", "certificate", "/dev/shm", a kind, a
    layer word) rather than say what was done to it? Such a word alone asserts no mechanism: a
    different fault of the same object names it too. Phrases, changed fields (``sizeLimit``,
    ``ingressClassName``) and states ("misrouted", "expired") say more."""
    flat = text.flatten(keyword)
    # an article or possessive before the thing still only names it ("the CR", "its custom resource")
    bare = re.sub(r"^(?:the|a|an|its|their|this|that)\s+", "", flat)
    if flat in lexicon.OBJECT_WORDS or bare in lexicon.OBJECT_WORDS or text.flatten(keyword.lower()) in lexicon.OBJECT_WORDS:
        return True
    # a named thing's own configuration ("kube-proxy's config") names where, not what was changed
    if re.fullmatch(r"[a-z0-9.]+(?: [a-z0-9.]+)?'s (?:config|configuration|configmap|settings?|conf)s?\*?", bare):
        return True
    # a hyphenated name ("config-sync", an init container's) names the thing, though it flattens to two words
    if re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)+", keyword) and not re.search(r"(?:ed|en|ing)$", keyword):
        return True
    if " " in flat:
        return False
    if re.search(r"[a-z][A-Z]", keyword) and keyword[0].isupper() and not re.search(r"\d", keyword):
        return True  # a kind ("DatastoreCluster", "NetworkPolicy") names a thing, as its lower-case name does
    if re.search(r"[a-z][A-Z]", keyword) and keyword.lower() not in lexicon.OBJECT_WORDS:
        return False  # a camelCase field name is the changed field
    return not re.search(r"(?:ed|en|ing)$", flat)  # a participle says what happened to the thing


def _match_any(flat: str, patterns: Iterable[str]) -> tuple[str, tuple[int, int]] | None:
    for pattern in patterns:
        # (most patterns lack their first literal in a sentence: that look-up is done here, without a call)
        pieces = reading.pattern_pieces(pattern)
        if not pieces or pieces[0][0] not in flat:
            continue
        span = reading.find_pattern(flat, pattern)
        if span:
            return pattern, span
    return None


@functools.lru_cache(maxsize=4096)
def _family_hits(flat: str) -> Mapping[str, tuple[str, tuple[int, int]]]:
    """Every other family's first match in a sentence (read-only: cached, as one sentence meets every truth)."""
    # a describe block's keys said in a line of prose ("Limits: memory: 12Mi") name the field as its words do ("limits
    # memory"): the colon after a key is read as a space (the same length, so spans stay where they are)
    flat = _KEY_COLON.sub(" ", flat)
    return {family: hit for family, patterns in lexicon.MECHANISMS.items() if (hit := _match_any(flat, patterns))}


_KEY_COLON = re.compile(r"(?<=[a-z]):(?=\s+[a-z])")


def _all_spans(flat: str, patterns: Iterable[str]) -> list[tuple[int, int]]:
    return [span for span in (reading.find_pattern(flat, p) for p in patterns) if span]


_LOCATION_KEYS = frozenset({"node", "nodes", "pod", "pods", "host", "hostname", "volume_nodes", "node_name"})


def _distinctive_value(flat: str, truth: GroundTruth) -> tuple[str, tuple[int, int]] | None:
    """A mutated value specific enough to name the mutation by itself ("geo:8093", "12Mi",
    "v9.9.9-missing"): letters and digits mixed, or punctuated, and not a component's name."""
    components = {c.lower() for c in truth.components}
    # where the fault is (its node, its pods) is no statement of what was done there
    where = {str(v).lower() for k, v in truth.mutated_values.items() if str(k).lower() in _LOCATION_KEYS for v in _scalars(v)}
    # a changed field's new value is the change itself when it is no word of the language: a compound ("fast-ssd") or
    # a value in CamelCase; a value inside a list that the change made different counts too (a toleration's effect
    # "NoScheduling" among the tolerations)
    new_values = _written_afters(truth)
    for value in concrete_values(truth):
        # a camelCase identifier (a flag's name, "imageSlowLoad") is as specific as a value with digits
        camel = (bool(re.fullmatch(r"[a-z]+(?:[A-Z][a-z0-9]+){2,}", value)) or bool(re.fullmatch(r"[\w./-]+=[\w./-]+", value))
                 or (value in new_values and bool(re.fullmatch(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+|[a-z0-9]+(?:-[a-z0-9]+)+", value))))
        # a range of two numbers ("32000 32003", a port range) is as specific as a value with letters
        number_range = bool(re.fullmatch(r"\d{3,}\s+\d{3,}", value.strip()))
        if (value.lower() in components or value.lower() in where or len(value) < 3
                or not (camel or re.search(r"\d", value))
                or not (re.search(r"[a-z.:/_-]", value.lower()) or number_range)):
            continue
        found = reading.find_pattern(flat, re.sub(r"[*+]", " ", value), allow_negated=True)
        if not found and number_range:
            found = _written(flat, value)
        address = re.fullmatch(r"([a-z][\w.-]*):(\d{2,5})", value.lower())
        if not found and address:  # "config-service on port 8500" is config-service:8500
            host = re.escape(text.flatten(address.group(1)))
            spoken = re.search(rf"(?<![a-z0-9]){host}\W+(?:[a-z]+\W+){{0,3}}{address.group(2)}(?![0-9])", flat)
            found = spoken.span() if spoken else None
        if found:
            return f"value {value}", found
    return None


def _before_after_pairs(truth: GroundTruth) -> list[tuple[str, str]]:
    """(before, after) of every change the truth records with both values (a ``{field, before, after}`` record or a
    field whose value is a ``{before, after}`` pair): the scalars that differ, found in step through both (a
    toleration's effect inside a list of tolerations)."""
    values = truth.mutated_values
    records = [values] + [v for v in values.values() if isinstance(v, Mapping)]
    out: list[tuple[str, str]] = []

    def differ(before: Any, after: Any) -> None:
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            for key in before.keys() & after.keys():
                differ(before[key], after[key])
        elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
            for b, a in zip(before, after, strict=True):
                differ(b, a)
        elif (before is not None and after is not None and not isinstance(before, bool | Mapping | list)
              and not isinstance(after, bool | Mapping | list) and str(before) != str(after)):
            out.append((str(before), str(after)))

    for record in records:
        differ(record.get("before"), record.get("after"))
    return out


# a sentence saying a value is no valid one ("'Rolling', which does not exist", "a misspelled type 'NoScheduling'")
_INVALID_VALUE = re.compile(r"\b(?:does not exist|do not exist|did not exist|not exist|no such|invalid|not (?:a )?valid|"
                            r"misspel\w*|typo\w*|unknown|unsupported|not supported|not recogni[sz]ed|bogus|made[ -]up|"
                            # "Kubernetes knows only 'RollingUpdate' or 'OnDelete'": the value beside it is none of them
                            r"(?:knows?|accepts?|allows?|supports?|understands?|recogni[sz]es?) only|"
                            r"only (?:knows?|accepts?|allows?|supports?|understands?|recogni[sz]es?))\b")


def _written(flat: str, value: str, *, allow_negated: bool = False) -> tuple[int, int] | None:
    """Where a value is written as a word of its own (a number also with thousands separators, or in words), not
    negated unless ``allow_negated`` (the value a change replaced is written "instead of 3", "no longer 3")."""
    forms = {text.flatten(v) for v in renderings(value)} | {value.lower()} | set(_number_words(value))
    if re.fullmatch(r"\d{4,}", value):
        forms |= {f"{int(value):,}", f"{int(value):,}".replace(",", " ")}
    for form in sorted(forms, key=len, reverse=True):
        if not form.strip():
            continue
        for match in re.finditer(rf"(?<![a-z0-9]){re.escape(form)}(?![a-z0-9])", flat):
            if allow_negated or not reading.negated(flat, match.start(), match.end()):
                return match.span()
    return None


_SMALL_NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                  "sixteen seventeen eighteen nineteen twenty").split()


def _number_words(value: str) -> list[str]:
    """An integer as it is said in words: "three", "minus one", "a hundred thousand", "100k"."""
    if not re.fullmatch(r"-?\d+", value.strip()):
        return []
    number = int(value)
    sign, size = ("minus ", "negative "), abs(number)
    if size <= 20:
        words = [_SMALL_NUMBERS[size]]
    elif size % 1000 == 0 and size // 1000 in (1, 10, 100):
        head = {1: "one", 10: "ten", 100: "a hundred"}[size // 1000]
        words = [f"{head} thousand", f"{head.replace('a ', 'one ')} thousand", f"{size // 1000}k"]
    else:
        return []
    return [f"{s}{w}" for w in words for s in sign] if number < 0 else words


_AHEAD = re.compile(r"\b(?:ahead|in\s+the\s+future|fast|forward|too\s+late\s+a\s+date|later\s+than)\b")
_BEHIND = re.compile(r"\b(?:behind|in\s+the\s+past|back|late|slow|earlier\s+than)\b")


def _wrong_direction(flat: str, truth: GroundTruth) -> str | None:
    """A signed offset the truth records (a clock 30 days behind: ``offset_minutes: -43200``) said the other way round
    ("the clock runs 30 days ahead"): the same object and size, the opposite change, whose symptoms differ (tokens not
    yet valid instead of already expired)."""
    signs = {v < 0 for k, v in truth.mutated_values.items()
             if "offset" in str(k).lower() and isinstance(v, int | float) and not isinstance(v, bool) and v}
    if len(signs) != 1:
        return None
    behind = signs.pop()
    for clause in re.split(r"[.;:]\s|\bbut\b", flat):
        if not re.search(r"\b(?:clock|date|time)\b", clause):
            continue
        ahead, back = _AHEAD.search(clause), _BEHIND.search(clause)
        wrong, right = (ahead, back) if behind else (back, ahead)
        if wrong and not right and not reading.negated(clause, wrong.start(), wrong.end()):
            return clause.strip()[:160]
    return None


def _relative_change(flat: str, truth: GroundTruth) -> tuple[str, tuple[int, int]] | None:
    """A numeric change written as its difference, not its values: "targetPort = container port + 1", "one above the
    port it listens on", "the port moved up by 10", "lowered by 2". The difference must be the truth's own (after
    minus before), so "+ 1" for a change of 10 says nothing."""
    for before, after in _before_after_pairs(truth):
        if not (re.fullmatch(r"-?\d+", before) and re.fullmatch(r"-?\d+", after)):
            continue
        delta = int(after) - int(before)
        size = abs(delta)
        if not size:
            continue
        amount = "|".join(re.escape(w) for w in [str(size), *_number_words(str(size))] + (["a", "an"] if size == 1 else []))
        up, down = (r"up|higher|above|more|over|past|greater|bigger|larger|raised|increased|bumped|incremented",
                    r"down|lower|below|less|under|smaller|lowered|reduced|decreased|decremented")
        toward = up if delta > 0 else down
        sign = r"\+" if delta > 0 else r"[-−]"
        spoken = re.search(
            rf"(?:{sign})\s*(?:{amount})(?![\d.])"
            rf"|(?<![\w.])(?:{amount})\s+(?:port\s+|ports\s+|numbers?\s+)?(?:{toward})\b"
            rf"|\b(?:{toward})\s+by\s+(?:{amount})\b"
            + (r"|\boff\s+by\s+one\b" if size == 1 else ""), flat)
        if spoken and not reading.negated(flat, spoken.start(), spoken.end()):
            return f"value {after} (was {before}, {'+' if delta > 0 else '-'}{size})", spoken.span()
    return None


def _changed_token(before: str, after: str) -> str | None:
    """The one part of a reference that the change made different ("fleetcast-operater" of
    ``sregym/fleetcast-operater:1.0`` against ``sregym/fleetcast-operator:1.0``), when it is long enough to name the
    change by itself; None when more than one part changed or the parts are no references."""
    old, new = re.split(r"[/:@]", before), re.split(r"[/:@]", after)
    if len(old) != len(new) or len(new) < 2:
        return None
    changed = [n for o, n in zip(old, new, strict=True) if o != n]
    if len(changed) != 1 or len(changed[0]) < 5 or not re.search(r"[-_.\d]", changed[0]):
        return None
    return changed[0]


def _before_and_after(flat: str, truth: GroundTruth) -> tuple[str, tuple[int, int]] | None:
    """The change written as its two values: the new one and the one it replaced ("'NoScheduling' instead of
    'NoSchedule'", "asked for 100,000 copies; set back to 3"), or the one part of a reference that changed, written
    alone ("the image is misspelled 'fleetcast-operater'"). Which field, the truth's own statement says; the two
    values together say that this one changed and how."""
    for before, after in _before_after_pairs(truth):
        token = _changed_token(before, after)
        if token is not None:
            found = _written(flat, token)
            if found:
                return f"value {token}", found
        if len(after) < 3 and not re.search(r"\d", after) or after.lower() in lexicon.TRIVIAL_VALUES:
            continue
        new_at, old_at = _written(flat, after), _written(flat, before, allow_negated=True)
        if new_at and old_at and new_at != old_at:
            return f"value {after} (was {before})", new_at
        # the new value quoted, in a sentence that says it is no valid value: what was set, and what is wrong with it
        quoted = re.search(rf"['\"]\s*{re.escape(after.lower())}\s*['\"]", flat)
        if quoted and _INVALID_VALUE.search(flat) and not reading.negated(flat, quoted.start(), quoted.end()):
            return f"value {after} (invalid)", quoted.span()
    return None


def _changed_fields(truth: GroundTruth) -> list[tuple[str, str]]:
    """(field, post-fault value) pairs of a truth where it records a change: a ``{field, before, after}`` record, or a
    field whose value is a ``{before, after}`` pair. A key with a plain value names an object or the context (the
    webhook's ``failurePolicy: Fail`` a CA-mismatch fault leaves as it was), not what was changed."""
    values = truth.mutated_values
    pairs: list[tuple[str, str]] = []
    if isinstance(values.get("field"), str) and values.get("after") is not None and not isinstance(values.get("after"), bool):
        pairs.append((values["field"], str(values["after"])))
    for key, value in values.items():
        if isinstance(value, Mapping) and value.get("after") is not None and not isinstance(value.get("after"), bool | Mapping):
            pairs.append((str(key), str(value["after"])))
    return pairs


def _field_with_value(flat: str, truth: GroundTruth) -> tuple[str, tuple[int, int]] | None:
    """The changed field named (the last part of its path, as written or in words: ``replicas``, ``sizeLimit`` as
    "size limit") and its post-fault value written right after it, joined by ``:``, ``=``, "is", "to", "of" or "set to":
    what was changed and to what, whatever the value looks like (a bare number is no statement alone, beside its field
    it is). Not when the value is the one it had before the fault or is negated."""
    for field, value in _changed_fields(truth):
        leaf = re.split(r"[.\[\]]", field.strip("[]"))[-1] or field
        if len(leaf) < 3 or len(value) < 1 or value.lower() in lexicon.TRIVIAL_VALUES:
            continue
        spoken = text.flatten(concepts.split_compounds(leaf))
        names = {re.escape(text.flatten(leaf)), re.escape(spoken).replace("\\ ", r"[\s_-]+")}
        forms = [r.lower() for r in renderings(value) if r]
        if re.fullmatch(r"\d{4,}", value):  # 100000 as "100,000" or "100 000"
            forms += [f"{int(value):,}", f"{int(value):,}".replace(",", " ")]
        rendered = "|".join(re.escape(r) for r in forms)
        if not rendered:
            continue
        pattern = re.compile(rf"(?<![a-z0-9])(?:{'|'.join(names)})(?![a-z0-9])\W{{0,3}}\s*(?:[:=]|is|are|to|of|was|were|"
                             rf"set to|(?:was|were|is|got)\s+(?:set|raised|changed|lowered|bumped)\s+to|now)?\s*\W{{0,2}}"
                             rf"(?:{rendered})(?![a-z0-9])")
        found = pattern.search(flat)
        if found and not reading.negated(flat, found.start(), found.end()):
            return f"field {leaf} = {value}", found.span()
        # the value counting what the field counts, in a word of the field's concept ("asked for 100,000 copies" for
        # replicas 100000): a count and the thing counted say the field and its new value (twenty-second round). Only
        # a value of two digits or more: "1 copy", "0 copies" are what many faults show
        family = concepts.family_of_word(spoken.split()[-1]) if spoken.split() else None
        if family and re.fullmatch(r"\d{2,}", value):
            for counted in re.finditer(rf"(?<![a-z0-9.,])(?:{rendered})\s+([a-z]+)", flat):
                if (concepts.family_of_word(counted.group(1)) == family
                        and not reading.negated(flat, counted.start(), counted.end())):
                    return f"field {leaf} = {value}", counted.span()
    return None


# what a sentence says follows from its first part ("..., which is why", "... so", "..., causing");
# "so that" states a purpose ("launched so that it insists on a password"), not a consequence
_CONSEQUENCE = re.compile(r"(?:,\s*|\s)(?:so|which is why|this is why|that is why|therefore|hence|thus|causing|"
                          r"leading to|resulting in|as a result|which means|which makes)\b"
                          r"(?!\s+that(?:\s+\S+){1,3}\s+(?:can|could|will|would|may|might|must|insists?|requires?|demands?)\b)")


def _truth_hit(words: str, flat: str, t: GroundTruth, vocab: Sequence[str]) -> tuple[str, tuple[int, int]] | None:
    """Where a sentence (``words``: its names masked; ``flat``: as written) asserts the truth's mechanism."""
    hit = _match_meaningful(words, vocab) if vocab else None
    if hit is None:  # the truth's own mechanism, word for word (as its reference diagnosis states it)
        own = text.phrase_pattern(t.mechanism)
        found_own = own.search(words) if own is not None and len(t.mechanism.split()) >= 3 else None
        if found_own:
            hit = (t.mechanism, found_own.span())
    # most of the mechanism's own words (as a plain paraphrase of the truth says it): for a fault without any
    # vocabulary, and for any fault whose mechanism has four words or more (two or three words, "stale
    # coordinates", are too few to tell a paraphrase from a coincidence)
    mechanism_words = _mechanism_words(t) if hit is None else []
    if mechanism_words and (not base_vocabulary(t) or len(mechanism_words) >= 4):
        present = [m for w in mechanism_words for m in [re.search(rf"(?<![a-z0-9]){re.escape(w)}", words)]
                   if m and not reading.negated(words, m.start(), m.end())]
        if len(present) / len(mechanism_words) >= 0.6:
            # the span of the words themselves: other mechanisms elsewhere in the sentence still count
            hit = (" ".join(m.group(0) for m in present), (min(m.start() for m in present), max(m.end() for m in present)))
    if hit is None:  # the mechanism's meaning: most of its concepts, whatever the words (concepts.py)
        hit = _concept_hit(words, t, flat)
    if hit is None:
        hit = _distinctive_value(flat, t)
    if hit is None:  # the changed field written with its new value ("sets replicas: 100000", "spec.replicas = 100000")
        hit = _field_with_value(flat, t)
    if hit is None:  # the new value beside the one it replaced, or the one part of a reference that changed
        hit = _before_and_after(flat, t)
    if hit is None:  # an object the fault added, by its name, with two of the mechanism's distinctive concepts
        hit = _object_with_concepts(words, t)
    if hit is None:  # the changed setting by its name, and what was done to it ("lost its TS_ORDER_ADDR env")
        hit = _named_change(flat, t)
    if hit is None:  # the changed value read as a quantity, and what was done with it ("capped at 16 KiB")
        found = quantity.find_quantity(flat, t.mutated_values)
        if found and _SETTING.search(flat):
            hit = (f"value {found[0]} as {found[1]!r}", (found[2], found[3]))
    if hit is None:  # the value that tells the fault from its siblings (its flag), said to be in its fault state
        hit = _identity_in_state(flat, t)
    if hit is not None and hit[0].startswith("value ") and _foreign_actor(flat, t):
        hit = None  # "a CronJob re-applies 12Mi" is not the webhook that patches 12Mi: a value two faults share
    if (hit is not None and hit[0].startswith("value ") and _RECURRING_ACTOR.search(text.flatten(t.mechanism))
            and not _ACTORS.search(flat) and hit[0].removeprefix("value ").split(" (")[0] not in _written_afters(t)):
        # the value an actor keeps applying ("a CronJob patches the limit to 12Mi") said with no actor at all ("geo's
        # limit is 12Mi") is the value a plain too-small limit has too: not this fault's mechanism. A value the truth
        # records as written into a field of its own object (a custom resource's spec the operator derives from) is
        # that change, whoever acts on it after
        hit = None
    return hit


def _written_afters(t: GroundTruth) -> set[str]:
    """The values the truth records as written into a field of its object: a changed field's new value, or what a
    change made different inside a list (a toleration's effect)."""
    return {a for _f, a in _changed_fields(t)} | {a for _b, a in _before_after_pairs(t)}


def _object_with_concepts(words: str, t: GroundTruth) -> tuple[str, tuple[int, int]] | None:
    """The name of an object the fault added or changed (``analytics-backfill``, ``frontend-proxy-tls``; not a
    system object other faults change too) and, outside that name, two distinctive concepts of the mechanism."""
    for pattern, shared in _object_patterns([t], {c.lower() for c in t.components}):
        found = pattern.search(words)
        if shared or not found or reading.negated(words, found.start(), found.end()):
            continue
        rest = words[: found.start()] + " " * (found.end() - found.start()) + words[found.end():]
        _share, distinct, spans = concepts.coverage(rest, t.mechanism)
        if distinct >= 2 and not any(reading.negated(rest, a, b) for a, b in spans):
            return f"object {found.group(0)} with concepts", found.span()
    return None


# the kinds of actor that change a workload from outside it
_ACTORS = re.compile(r"(?<![a-z0-9])(?:mutating webhook|admission webhook|admission hook|webhook|cronjob|cron job|daemonset|"
                     r"job|operator|controller|limitrange|limit range|resourcequota|resource quota|vpa|hpa|autoscaler)s?(?![a-z0-9])")


# an actor that keeps changing a workload from outside it (not the changed object itself, a DaemonSet's image)
_RECURRING_ACTOR = re.compile(r"(?<![a-z0-9])(?:cronjob|cron job|job|operator|controller|webhook|autoscaler)s?(?![a-z0-9])")


def _foreign_actor(flat: str, t: GroundTruth) -> bool:
    """Does the sentence name an actor of a kind the truth never mentions (a CronJob for a webhook's fault)?"""
    known = _truth_fields(t) + " " + text.flatten(t.resource_kind)
    if re.search(r"\b(?:operator|controller)s?\b", known):  # an operator is the resource's controller, by either name
        known += " operator controller"
    # an actor's general kind is the truth's own when the truth names its head word ("admission webhook" for the
    # truth's mutating webhooks)
    return any(m.group(0).rstrip("s") not in known and m.group(0) not in known
               and m.group(0).rstrip("s").split()[-1] not in known for m in _ACTORS.finditer(flat))


def _concept_hit(words: str, t: GroundTruth, flat: str = "") -> tuple[str, tuple[int, int]] | None:
    """Most of the meaning of one of the truth's own statements of what was done (its mechanism, the mechanism's
    cause part, the prose's), in the diagnosis's own words: a weighted share of its concepts of at least 60 %, three
    of them distinctive, none denied (:mod:`.concepts`)."""
    for statement in _statements(t):
        hit = _statement_hit(words, t, statement, flat)
        if hit is not None:
            return hit
    return None


def _statements(t: GroundTruth) -> tuple[str, ...]:
    return concepts.statements(t.mechanism, t.prose, (*t.components, t.namespace))


def _names_a_changed_field(words: str, t: GroundTruth) -> bool:
    """Does the sentence carry a concept of what the fault changed, as its mutated values name it (``hostPort``,
    ``caBundle``, ``ingress``, ``requirepass``)? Where a fault's statement is long, its context (the webhook with
    failurePolicy Fail that a CA-mismatch fault also has) can make up two fifths of it; the changed field cannot."""
    wanted = concepts.field_concepts(tuple(_field_names(t.mutated_values)))
    if not wanted:
        return True
    return any(c in wanted for c, _a, _b in concepts.concepts(words))


def _names_the_changed_object(words: str, t: GroundTruth, statement: str) -> bool:
    """Does the sentence say, as the truth's statement does, the object the fault changed: its kind ("the Service
    was deleted") or a field it changed ("Service port changed")? A statement without one ("stale coordinates")
    says an effect, not an object and its change."""
    from .text import flatten

    said = {c for c, _span in concepts.present(words, statement)}
    kind = {c for c, _a, _b in concepts.concepts(flatten(concepts.split_compounds(t.resource_kind)))}
    fields = concepts.field_concepts(tuple(_field_names(t.mutated_values)))
    # the changed field by its plain name too, a word every fault shares included ("replicas": "asks for 0 copies";
    # tenth round of issue #35)
    fields |= {c for name in _field_names(t.mutated_values) for c, _a, _b in concepts.concepts(flatten(concepts.split_compounds(name)))
               if len(c) >= 4}
    return bool(said & (kind | fields))


_NOT_FIELDS = frozenset({"before", "after", "original", "old", "new", "outcome", "served_by"}) | _LOCATION_KEYS


def _field_names(values: Any) -> list[str]:
    names: list[str] = []
    if isinstance(values, Mapping):
        for key, value in values.items():
            if str(key).lower() not in _NOT_FIELDS and not str(key).startswith("original"):
                names.append(str(key))
            names += _field_names(value) if isinstance(value, Mapping) else []
    return names


# the bars of the concept reading: most of a statement (a weighted 60 %), or a long cause part said in a few of its
# own words (four distinctive concepts in four places, two fifths of its weight)
_SHARE = 0.6
_RELAXED_PLACES = 4
_RELAXED_SHARE = 0.4
_WHOLE_STATEMENT = 0.85


def _statement_hit(words: str, t: GroundTruth, statement: str, flat: str = "") -> tuple[str, tuple[int, int]] | None:
    share, _distinct, spans = concepts.coverage(words, statement)
    wanted = concepts.mechanism_concepts(statement)
    weight = dict(wanted)
    # distinctive concepts are counted by the places that carry them: one compound of the diagnosis
    # ("ValidatingWebhookConfiguration", "failurePolicy") is one word, not three concepts
    distinctive_spans = [span for concept, span in concepts.present(words, statement) if weight.get(concept) == 1.0]
    places = set(distinctive_spans)
    # ... but a wording of several words that carries several concepts ("no two copies may share a machine": required,
    # anti, affinity) carries one per word at most, not one in all
    distinct = placed = sum(min(distinctive_spans.count(span), len(words[span[0]:span[1]].split())) for span in places)
    # the truth's own changed quantity stated in the sentence ("drops ~60% of packets") is one more distinctive
    # concept; a statement with fewer than three ("stale coordinates", "Service port changed") is too thin to tell
    # a paraphrase from a coincidence, and a short one ("packet loss on the node hosting the pods") needs all three
    available = sum(1 for _c, w in wanted if w == 1.0)
    where = {str(v).lower() for k, v in t.mutated_values.items() if str(k).lower() in _LOCATION_KEYS for v in _scalars(v)}
    values = [v for v in concrete_values(t) if v.lower() not in where]
    if values:
        available += 1
        found = next((m for v in values for m in [text.phrase_pattern(v)] if m is not None and m.search(words)), None)
        # a value that holds a component's name ("rate-config") is masked in ``words``: read it as written
        in_flat = None if found is not None or not flat else next(
            (m for v in values for m in [text.phrase_pattern(v)] if m is not None and m.search(flat)), None)
        said = quantity.find_quantity(words, t.mutated_values) if found is None else None
        if found is not None:
            distinct += 1
            at = found.search(words)  # found above: it matches
            spans = [*spans, at.span()] if at is not None else spans
        elif said is not None:  # the same quantity in the writer's unit ("a second and a half" for delay_ms 1500)
            distinct += 1
            spans = [*spans, (said[2], said[3])]
        elif in_flat is not None:
            distinct += 1
            at = in_flat.search(flat)
            spans = [*spans, at.span()] if at is not None else spans
        else:  # the change by how much ("the port moved up by 10")
            relative = _relative_change(flat or words, t)
            if relative is not None:
                distinct += 1
                spans = [*spans, relative[1]] if not flat or flat == words else spans
    needed = 3 if available >= 3 else available + 1
    if values and available == 2 and distinct == 2 and (found is not None or in_flat is not None):
        # a short statement said whole with the truth's own value ("the rate-config ConfigMap does not exist any
        # more"): the value tells the object apart, the statement's one distinctive concept says what was done
        needed = 2
    # a short statement of a truth that records no value ("the Service was deleted", "Service port changed from the
    # one clients use") is its object and its change and nothing more: said whole, it is said (ninth round of issue
    # #35; the value that would make the third concept does not exist to be said)
    whole = (not values and 1 <= available < 3 and share >= _WHOLE_STATEMENT and distinct >= available
             and _names_the_changed_object(words, t, statement))
    # most of the statement, or (a long statement, said in fewer words) four of its distinctive concepts and
    # two fifths of its weight: a diagnosis states a cause part of a dozen concepts in five of them
    if not (share >= _SHARE and distinct >= needed) and not whole:
        # the lower bar only for a cause part (no effects in it: the effects a sibling fault shares, "clients reject
        # the handshake", are no statement of this cause), with what changed named, by no actor the truth lacks
        if not (placed >= _RELAXED_PLACES and share >= _RELAXED_SHARE and concepts.is_cause_part(statement)
                and _names_a_changed_field(words, t) and not _foreign_actor(words, t)):
            return None
    present = {span: concept for concept, span in concepts.present(words, statement)}
    if not _carries_the_defect(words, t, set(present.values())):
        return None
    glossed = concepts.gloss_spans(words, statement)
    spans = [(a, b) for a, b in spans if (a, b) in glossed or not any(ga <= a and b <= gb for ga, gb in glossed)]
    if any(concepts.negated_in(words, a, b, statement, present.get((a, b), "")) for a, b in spans):
        return None
    spans = sorted(spans)
    if not spans:
        return None
    return "concepts: " + " ".join(words[a:b] for a, b in spans), (spans[0][0], spans[-1][1])


_FAILS_CLOSED = re.compile(r"\bfail(?:s|ed|ing)?[\s-]+(?:closed|shut)\b|\bfailurepolicy\W+fail\b")
_FAILS_OPEN = re.compile(r"\bfail(?:s|ed|ing)?[\s-]+open\b|\bfailurepolicy\W+ignore\b")


def _other_failure_policy(flat: str, t: GroundTruth) -> bool:
    """A webhook said to fail closed where the truth's fails open (``failurePolicy: Ignore``), or the other way round:
    the same webhook setting with the other value (red-team round 10: "fails closed" read as four slow mutating
    webhooks that ignore their failures)."""
    policy = str(t.mutated_values.get("failurePolicy", "")).lower()
    if policy == "ignore":
        return bool(_FAILS_CLOSED.search(flat)) and not _FAILS_OPEN.search(flat)
    if policy == "fail":
        return bool(_FAILS_OPEN.search(flat)) and not _FAILS_CLOSED.search(flat)
    return False


def _carries_the_defect(words: str, t: GroundTruth, said: set[str]) -> bool:
    """Does a concept reading carry what tells the fault from its siblings, not only the context they share (red-team
    round 10: "its webhook fails closed and blocks rate's pods" read as a CA mismatch, an outage and a timeout at once;
    "a field of orbit-db's spec was changed to an invalid value" as a bad toleration and a bad update strategy)?
    A mechanism "<object> ... whose <defect>" needs a concept of the defect, whichever of its statements is read; a truth that records which field it
    changed (``{"field": "spec.tolerations", ...}``) needs that field named, or its new value."""
    in_words = said | {c for c, _a, _b in concepts.concepts(words)}
    parts = concepts.split_effect(t.mechanism)
    whose = re.split(r"\bwhose\b", parts[0] if parts else t.mechanism, maxsplit=1)  # in the cause part only
    if len(whose) == 2:
        wanted = {c for c, weight in concepts.mechanism_concepts(whose[1]) if weight == 1.0}
        if wanted and not wanted & (in_words | {c for c, _span in concepts.present(words, whose[1])}):
            return False
    field = t.mutated_values.get("field")
    if isinstance(field, str) and field:
        path = [p for p in re.split(r"[.\[\]]", field) if p and not p.isdigit() and p not in ("spec", "metadata", "status")]
        named = set(concepts.field_concepts(tuple(path)))  # "updateStrategy": strategy (its "update" is any change)
        after = t.mutated_values.get("after")
        values = [str(v) for v in _scalars(after)] if after is not None else []
        if named and not named & in_words and not any(
                v and len(v) >= 3 and re.search(rf"(?<![a-z0-9]){re.escape(text.flatten(v))}(?![a-z0-9])", words) for v in values):
            return False
    return True


# what is done to a setting named by the truth: taken away (for a fault that removes it), or set to a value
_REMOVED = re.compile(r"\b(?:lost|loses|removed|deleted|dropped|missing|gone|no longer|does not exist|do not exist|not set|"
                      r"unset|taken out|absent|without|lacks?|lacking|remove|removes|delete|deletes|no more)\b")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*_[A-Z0-9_]+")


def _named_change(flat: str, truth: GroundTruth) -> tuple[str, tuple[int, int]] | None:
    """The truth's changed setting named with what was done to it: for a fault that removes it, an environment
    variable's name beside "lost", "removed", "no longer has", "does not exist"; a command-line option with its
    new value ("-m 2", "-m was changed from 64 to 2")."""
    removal = bool(_REMOVED.search(text.flatten(truth.mechanism)))
    for key, value in truth.mutated_values.items():
        key = str(key)
        names = [key] if _ENV_NAME.fullmatch(key) else []
        names += [str(v) for v in _scalars(value) if isinstance(v, str) and _ENV_NAME.fullmatch(v)]
        for name in names if removal and _REMOVED.search(flat) else ():
            found = reading.find_pattern(flat, name, allow_negated=True)
            if found:
                return f"setting {name}", found
        if re.fullmatch(r"-{1,2}[a-z][\w-]*", key):  # a command-line option: its new value after it
            after = value.get("after") if isinstance(value, Mapping) else value
            if after is None or isinstance(after, bool | Mapping | list):
                continue
            option = re.escape(text.flatten(key))
            found_option = re.search(rf"(?<![a-z0-9]){option}(?:\s+\S+){{0,8}}?\s+(?:to\s+|=\s*)?[(\[]?{re.escape(str(after).lower())}"
                                     rf"(?![a-z0-9]|\.\d)", flat)
            if found_option:
                return f"option {key} {after}", found_option.span()
    return None


# what is done to a quantity: with the truth's value in the same sentence, the change itself
_SETTING = re.compile(r"\b(?:capped|cap|caps|limited|limit|limits|set to|sized|only|reduced|lowered|shrunk|raised|"
                      r"changed to|behind|ahead|skew\w*|drift\w*|off by|delay\w*|added|adds|injected|throttl\w*|"
                      # what a value asked for or held back (ninth round of issue #35): "asks for 512 gigabytes",
                      # "held up by 1500 ms"
                      r"asks? for|asking for|asked for|requests?|requested|reserves?|reserved|held up|holds? up|"
                      r"holding up|slowed(?: down)? by)\b")


@functools.lru_cache(maxsize=8192)
def _is_object_word(pattern: str) -> bool:
    # a quantified thing ("every node", "all pods", "each container") still only names the thing: it says where
    flat = re.sub(r"^(?:(?:every|all|each|any|the|its|their|both)\s+)+", "", text.flatten(pattern).strip(" *"))
    return flat in lexicon.OBJECT_WORDS or flat in _PLACES


# namespaces of the platform: where a fault is, not what it did
_PLACES = frozenset({"kube system", "kube public", "kube node lease"})


def _match_meaningful(flat: str, patterns: Sequence[str]) -> tuple[str, tuple[int, int]] | None:
    """The first match of a phrase that says what was done. A phrase that only names a thing
    ("/dev/shm", "init container", "ServiceAccount", "DiskPressure") asserts no mechanism alone,
    unless the vocabulary has nothing else."""
    meaningful = _meaningful(tuple(patterns))
    return _match_any(flat, meaningful or patterns)


@functools.lru_cache(maxsize=4096)
def _meaningful(patterns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p for p in patterns if not _is_object_word(p))


def _mechanism_words(truth: GroundTruth) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]{4,}", text.flatten(truth.mechanism)) if w not in _STOP]


def _mask_names(flat: str, components: Iterable[str]) -> str:
    """The sentence with multi-word component names blanked out (same length): the words of a name
    are not mechanism words ("removed from the user-service deployment" removes no Service, "every
    connection to postgres-user is dropped" drops no user)."""
    for name in sorted(components, key=len, reverse=True):
        words = text.flatten(name)
        if " " not in words:
            continue  # a one-word name is also plain English ("the user role was dropped")
        flat = re.sub(rf"(?<![a-z0-9]){re.escape(words)}(?![a-z0-9])", lambda m: "#" * len(m.group(0)), flat)
    return flat


def _mechanisms(sentences: Sequence[reading.Sentence], topic: Mapping[int, set[str]], truths: Sequence[GroundTruth],
                components: Iterable[str] = (), exonerating: Iterable[int] = (),
                details: dict[str, tuple[str, str]] | None = None, added: dict[str, str] | None = None):
    """Which truth mechanisms are asserted about their component, which other mechanisms are
    asserted at all (not in ``exonerating`` sentences, which say something is fine or ruled out),
    and in which sentences the truth mechanisms were found (``details``, when given: fault ->
    (the phrase, the whole sentence)).

    An enumeration is read as a whole: three or more mechanisms in one sentence, or over the items of
    one list, assert none of them (and are a kitchen sink), whatever the count and the wording."""
    exonerating = set(exonerating)
    found: dict[str, str] = {}
    other: dict[str, str] = {}
    where: list[int] = []
    truth_faults = {t.fault for t in truths}
    components = tuple(components)
    read = [_read_with_asides(s, topic, truths, truth_faults, components, s.index in exonerating) for s in sentences]
    # "two faults on geo: ...": every other mechanism of the text is one of the causes it says there are
    several = (any(_SEVERAL_FAULTS.search(s.flat) for s in sentences if not s.hedged) or _table_of_causes(sentences)
               or _listed_under_cause(sentences))
    # the mechanisms named over the items of each list (a list of candidates is one enumeration)
    per_list: dict[int, set[str]] = {}
    for s, (families_here, _found, _details, _other) in zip(sentences, read, strict=True):
        if s.listed >= 0 and families_here:
            per_list.setdefault(s.listed, set()).update(families_here)
    for s, (families_here, found_here, details_here, other_here) in zip(sentences, read, strict=True):
        enumerated = len(families_here) >= 3 or (s.listed >= 0 and len(per_list.get(s.listed, ())) >= 3)
        if s.hedged:  # a hedge asserts nothing, but a hedged list of mechanisms is still a kitchen sink
            if enumerated:
                for family, evidence in other_here.items():
                    other.setdefault(family, evidence)
            elif added is not None and reading.KEPT_OPEN.search(text.normalize(s.raw)):
                # "Not ruled out: geo's memory limit was lowered to 12Mi": a second cause the writer keeps open beside
                # the one it ranks first (red-team round 17, finding D)
                for family, evidence in other_here.items():
                    added.setdefault(family, evidence)
            continue
        for family, evidence in other_here.items():
            other.setdefault(family, evidence)
            # a second cause said as a change of its own, in a sentence of its own ("geo's memory limit was lowered to
            # 12Mi"; red-team round 15, finding 8), adds a cause as much as "in addition" does
            if added is not None and (several or s.added or _ADDITIVE.search(s.flat) or (not found_here and (_SAID_CHANGED.search(s.flat) or _CHANGED_VALUE.search(s.flat)
                                                                               or reading.ARROW_CHANGE.search(s.raw)))
                                      or (found_here and _COORDINATED_CHANGE.search(s.flat)
                                          and not _shares_truth_object(evidence, truths))):
                added.setdefault(family, evidence)
        if enumerated:  # an enumeration of mechanisms asserts none of them
            continue
        for fault, evidence in found_here.items():
            found.setdefault(fault, evidence)
            if details is not None and fault in details_here:
                details.setdefault(fault, details_here[fault])
        if found_here:
            where.append(s.index)
    if added is not None and found:
        # a step of the fix that says what was done ("2. raise geo's memory limit back to 256Mi: it was lowered to
        # 12Mi") asserts that change as much as a sentence of its own does: a second cause beside the fault's (round 21,
        # red-team finding D). A step that only says what to do ("2. then restart the pod") asserts nothing.
        for s in sentences:
            if s.action and not s.hedged and _SAID_CHANGED.search(s.flat):
                # a command's option names the field it sets ("--limits=memory=256Mi" is limits memory): the reason the
                # step gives ("(the limit had been lowered to 12Mi)") is about that field (red-team round 19, finding 4)
                step = _read_with_asides(attrs.evolve(s, action=False, flat=_OPTION_EQUALS.sub(" ", s.flat)), topic, truths,
                                         truth_faults, components,
                                         s.index in exonerating)
                for family, evidence in step[3].items():
                    added.setdefault(family, evidence)
    return found, other, where


_OPTION_EQUALS = re.compile(r"(?<=[a-z])=(?=[a-z0-9])")


_CHANGE_VERBS = frozenset({"lowered", "raised", "reduced", "increased", "changed", "modified", "switched", "turned",
                           "flipped", "edited", "patched", "rotated", "revoked", "renamed", "tightened", "loosened",
                           "removed", "deleted", "dropped", "count", "value", "setting"})


def _shares_truth_object(evidence: str, truths: Sequence[GroundTruth]) -> bool:
    """Does another mechanism's phrase ("'replica count .. raised' in ...") name a thing the truth's own statement
    names ("more replicas than nodes")? Then the second change after "and" is part of the truth's, not another cause."""
    phrase = evidence.split("'")[1] if evidence.count("'") >= 2 else evidence
    own = _truth_words(truths)
    return any(w[:6] in own for w in re.findall(r"[a-z]{4,}", phrase) if w not in _CHANGE_VERBS)


# one verb, two changes: "the image was changed to X, and its memory limit to 12Mi", or a second change of its own
# after "and" ("... and its memory limit was lowered to 12Mi") in the sentence that states the fault's (round 21)
# a changed value said with its participle: "lowered to 12Mi", "cut from 256Mi" (see _CHANGED_VALUE)
_PARTICIPLE_VALUE = r"(?:lowered|raised|reduced|increased|decreased|cut|bumped|shrunk)\s+(?:from|to)\s+[`'\"]?\S*\d"
_COORDINATED_CHANGE = re.compile(r"\band\s+(?:its|the|their|his|her|a|an|[\w-]+'s)\s+(?:[\w.'-]+\s+){1,4}?"
                                 r"(?:to\s+[`'\"]?\S*\d|" + _PARTICIPLE_VALUE + r"|(?:was|were|has\s+been|have\s+been|got)\s+(?:\w+\s+)?"
                                 r"(?:lowered|raised|reduced|increased|changed|modified|set|cut|switched|turned|flipped|edited|"
                                 r"patched|rotated|revoked|renamed|tightened|loosened|removed|deleted|dropped)\b)")


_ASIDE = re.compile(r"\s*\(([^()]{1,160})\)")


def _without_own_asides(s: reading.Sentence, truths: Sequence[GroundTruth]) -> reading.Sentence:
    """The sentence without the asides in brackets that only describe what the truth records ("The DB_PASSWORD variable
    (from Secret user-db, key password) was removed": where the removed variable came from, red-team round 15's honest
    answer that scored 0.33): such an aside is a detail of the truth's own object, neither another mechanism nor words
    that come between the ones of the statement. An aside naming anything else stays."""
    if "(" not in s.raw:  # most sentences: nothing to read
        return s
    leaves = [leaf for t in truths for leaf in _record_leaves(t.mutated_values) if leaf not in ("True", "False")]
    recorded = {r for r in (text.flatten(v) for v in leaves) if len(r) >= 3}

    def own(match: re.Match[str]) -> bool:
        inside = text.flatten(match.group(1))
        named = [w for w in re.findall(r"[a-z0-9][\w.-]*[a-z0-9]", inside) if not _ASIDE_FILLER.fullmatch(w)]
        return bool(named) and all(any(w == r or w in r.split() for r in recorded) for w in named)

    if not recorded:
        return s
    flat = _ASIDE.sub(lambda m: "" if own(m) else m.group(0), s.flat)
    if flat == s.flat:
        return s
    return attrs.evolve(s, flat=flat, raw=_ASIDE.sub(lambda m: "" if own(m) else m.group(0), s.raw))


def _read_with_asides(s: reading.Sentence, topic: Mapping[int, set[str]], truths: Sequence[GroundTruth],
                      truth_faults: set[str], components: tuple[str, ...], exonerating: bool):
    """:func:`_sentence_mechanisms` of the sentence, where an aside that only describes the truth's own object
    (:func:`_without_own_asides`) names no other mechanism and keeps no words of a statement apart; what the aside
    itself names of the truth (a flag's name in brackets) still counts for it."""
    as_written = _sentence_mechanisms(s, topic, truths, truth_faults, components, exonerating)
    stripped = _without_own_asides(s, truths)
    if stripped is s:
        return as_written
    families, found, details, other = _sentence_mechanisms(stripped, topic, truths, truth_faults, components, exonerating)
    return families, {**found, **as_written[1]}, {**details, **as_written[2]}, other


#: the words of an aside that name nothing ("from Secret user-db, key password": from, key, secret)
_ASIDE_FILLER = re.compile(r"from|of|in|the|its|key|secret|configmap|field|value|env|var|variable|set|by|via|a|an|and")


def _sentence_mechanisms(s: reading.Sentence, topic: Mapping[int, set[str]], truths: Sequence[GroundTruth],
                         truth_faults: set[str], components: tuple[str, ...], exonerating: bool):
    """One sentence's mechanisms: (families named, truth faults asserted about their component -> evidence,
    -> (phrase, sentence), other families asserted -> evidence)."""
    if s.action:  # what is to be done asserts no mechanism, the truth's or another ("Next: lower its priority")
        return set(), {}, {}, {}
    spans: list[tuple[int, int]] = []
    families_here: set[str] = set()
    found_here: dict[str, str] = {}
    details_here: dict[str, tuple[str, str]] = {}
    other_here: dict[str, str] = {}
    named_only: set[str] = set()
    family_spans: list[tuple[str, tuple[int, int]]] = []
    words = _mask_names(s.flat, components)
    consequence = _CONSEQUENCE.search(s.flat)
    # the sentence up to what it says follows, when it says so after a cause of some words
    cause_end = consequence.start() if consequence and consequence.start() >= 12 else len(s.flat)
    # an effect stated first and its cause after ("the I/O errors come from a corrupt cache", "pods are rejected
    # because the webhook's backend is down"): who does what to whom
    effect_first = _EFFECT_BEFORE.search(s.flat)
    effect_end = effect_first.start() if effect_first and effect_first.start() >= 8 else -1
    for t in truths:
        vocab = vocabulary(t)
        hit = _truth_hit(words, s.flat, t, vocab)
        if hit is None:
            continue
        if (effect_first is not None and effect_end >= 0 and hit[1][1] <= effect_end
                and _another_cause(words[effect_first.end():], s.flat[effect_first.end():], t, components)
                and _truth_hit(words[effect_first.end():], s.flat[effect_first.end():], t, vocab) is None):
            # the truth's mechanism (its words, its symptom) only as the effect of another cause the sentence names:
            # a victim of that cause, not the cause asserted
            spans.extend(_all_spans(words, vocab))
            continue
        # (a mechanism stated with its own effect, "the blocks are unreadable, so reads fail with EIO", is read from
        # where it starts: before the consequence, with two of its distinctive concepts there)
        # An observation before "so" ("logins fail with 'role does not exist' -> the role was dropped") makes it an
        # inference: what follows is the writer's conclusion, the mechanism asserted.
        if (cause_end < len(s.flat) and _truth_hit(words[:cause_end], s.flat[:cause_end], t, vocab) is None
                and not (hit[1][0] < cause_end and concepts.coverage(words[:cause_end], t.mechanism)[1] >= 2)
                and not _inference(s.flat[:cause_end])):
            # only in what the sentence says follows ("the Service was deleted, which is why the name
            # gives NXDOMAIN"): a symptom there, not the mechanism asserted
            spans.extend(_all_spans(words, vocab))
            continue
        if _presence_denied(s.flat, hit[1], t):
            # "the nodes have no taint" for a taint the fault added: the thing denied, not asserted
            spans.extend(_all_spans(words, vocab))
            continue
        if _a_sibling_decides(words, hit[0], t, vocab, truth_faults):
            # a word two faults share ("liveness") next to the other one's own words ("wrong path" for a
            # too-aggressive probe): the sentence states the sibling fault of the same object
            spans.extend(_all_spans(words, vocab))
            continue
        if _narrower_scope(s.flat, t):
            # the sentence narrows what the truth says of a whole ("only for one name" of a template answering NXDOMAIN
            # for the whole zone): the sibling fault of the same object, not the cause asserted
            spans.extend(_all_spans(words, vocab))
            continue
        if _another_actor(words, hit[1], t):
            # another kind of actor does it ("an init container fills /dev/shm" for a /dev/shm sized too small): the
            # sibling fault whose actor that is, even where the two share words
            spans.extend(_all_spans(words, vocab))
            continue
        if _sibling_field(s.flat, t):
            # the right object, its twin field: a memory *limit* of 512Gi is not the truth's memory *request*
            spans.extend(_all_spans(words, vocab))
            continue
        if _another_field_of_object(s, cause_end, t):
            # the right object, another of its fields (a CPU limit for a memory limit, a probe's path for its timings,
            # another environment variable): a different change of the same object, not this one (round 21)
            spans.extend(_all_spans(words, vocab))
            continue
        if _unchanged_field_blamed(s.flat, t):
            # the record's other field blamed ("checks the wrong port" for a probe whose path was changed, its port
            # kept): the sibling fault of the same object (red-team round 13, finding 7)
            spans.extend(_all_spans(words, vocab))
            continue
        if _other_field(s.raw, s.flat, t):
            # the faulty object, but another of its fields set ("the kubelet config sets maxPods to 10"):
            # a different fault of the same object, not this one
            spans.extend(_all_spans(words, vocab))
            continue
        if (claims.other_value(s.raw, t.mutated_values) or _other_port(s.flat, t) or _other_image(s.raw, t)
                or _other_quantity(s.flat, t) or _other_signal(s.flat, t) or _other_percent(s.flat, t)
                or claims.other_family(words[:cause_end], _truth_fields(t))
                or _other_failure_policy(s.flat, t)):
            # the faulty object with what the sentence claims of it read against what the truth changed: its own field
            # given another value ("failurePolicy: Fail" for Ignore), or a defect of another family only ("a cert for
            # the wrong host name" for an expired one, "the Role was widened" for one made read-only)
            spans.extend(_all_spans(words, vocab))
            continue
        if _generated_workload_only(s.flat, t) or _old_value_only(s.flat, t):
            # the workload an operator derives from the custom resource, named as where the change is ("the orbit-db
            # StatefulSet was scaled to 100000") with no word of the resource or its operator: the generated object is
            # the victim of the change, not its place; or the field said with the value it had before the fault
            spans.extend(_all_spans(words, vocab))
            continue
        if _opposite_state(s.flat, t):
            # the right switch in the opposite state ("FEATURE_RECOMMEND_V2 is false", "the flag is off" for a flag the
            # fault turned on): the same field, the other value, so not the change that was made
            spans.extend(_all_spans(words, vocab))
            continue
        spans.append(hit[1])
        family_spans.append((t.fault, hit[1]))
        # every phrase of the truth's vocabulary in this sentence is the truth's, not evidence of
        # another mechanism ("readiness probe misconfigured" must not read as a liveness fault)
        spans.extend(_all_spans(words, vocab))
        families_here.add(t.fault)
        if {c.lower() for c in t.components} & topic.get(s.index, set()):
            found_here.setdefault(t.fault, f"{hit[0]!r} in {s.raw[:160]!r}")
            if s.hedged is False:
                details_here.setdefault(t.fault, (str(hit[0]), s.raw))
    own_words = _truth_words(truths)
    for family, patterns in lexicon.MECHANISMS.items():
        if family in truth_faults or exonerating:  # "its liveness probe is fine" blames nothing
            continue
        # where the sentence states its cause first: "its readiness probe asks for /ready-v2, so it never becomes
        # Ready" names the probe as the cause before the words of its effect (round 16, finding 5)
        hit = (_family_hits(words[:cause_end]).get(family) if cause_end < len(words) else None) or _family_hits(words).get(family)
        if not hit or any(hit[1][0] < e and b < hit[1][1] for b, e in spans):
            continue
        spans.append(hit[1])  # the same words assert one mechanism ("liveness": not two liveness faults)
        if hit[1][0] >= cause_end:  # only in what the sentence says follows: an effect, not a cause
            continue
        if _said_by_truth(words[hit[1][0]:hit[1][1]], own_words):
            continue  # the truth's own words ("floods", "memory limit", "overridden") describe the truth
        families_here.add(family)
        family_spans.append((family, hit[1]))
        other_here[family] = f"{hit[0]!r} in {s.raw[:160]!r}"
        if _is_object_word(hit[0]) and not _match_any(words, _meaningful(patterns)):
            named_only.add(family)
    if found_here and _mechanisms_as_alternatives(words, family_spans):
        found_here, details_here = {}, {}  # "the grants were revoked or the password rotated" asserts neither
    if len(families_here - named_only) < 2:
        # a thing named without what was done to it ("its ServiceAccount", "the init container") asserts
        # no other mechanism; in an enumeration of three or more, each name stands for a fault
        for family in named_only:
            families_here.discard(family)
            other_here.pop(family, None)
    return families_here, found_here, details_here, other_here


# a cause stated as one more, beside the one already given ("in addition", "on top of that", "X is on as well", "a
# second fault"): a diagnosis that adds a false cause to the right one is wrong (red-team round 14, finding 4)
_ADDITIVE = re.compile(r"\b(?:in addition|additionally|on top of (?:that|this|it)|as well|besides|moreover|furthermore|"
                       r"also|too|(?:a|the) second (?:fault|cause|problem|defect|issue)|two (?:faults|causes|problems|defects|issues)|"
                       r"another (?:fault|cause|problem|defect|issue))\b"
                       # "... does not match Secret geo-db either" (a negative "also"), "(and its memory limit to 12Mi)":
                       # red-team round 16, finding 5
                       r"|\beither\W*$|\(\s*and\s+(?:its|the|their|his|her)\s+[\w\s.'-]{1,40}?\s+(?:to|at|was|were|is|set)\b")


# a table column that lists causes: a cause, a change, a finding, an issue (its header cell's words)
_CAUSE_COLUMN = re.compile(r"\|\s*(?:[\w-]+\s+){0,2}(?:causes?|changes?|changed|findings?|issues?|problems?|factors?|faults?|"
                           r"defects?|misconfigurations?|before|after|old(?:\s+value)?|new(?:\s+value)?|diff)\s*(?=\|)")


def _table_of_causes(sentences: Sequence[reading.Sentence]) -> bool:
    """A markdown table with a cause column and two rows or more: each row is one of the causes it says there are
    (red-team round 15, finding 8: a table of two root causes, one false, passed). A column of what changed, what was
    found or what is wrong ("change", "finding", "issue", "before | after") lists causes as much (round 26, red-team
    round 20's finding 4: "| geo | image tag 1.0 -> v9.9.9-missing |" above "| geo | memory limit 256Mi -> 12Mi |")."""
    header = next((s for s in sentences if s.flat.lstrip().startswith("|") and _CAUSE_COLUMN.search(s.flat)), None)
    if header is None:
        return False
    rows = [s for s in sentences if s.index > header.index and s.flat.lstrip().startswith("|")
            and not re.fullmatch(r"[\s|:-]*", s.flat)]
    return len(rows) >= 2


# a row that clears its component ("| cart | healthy |", "| currency | not involved |") blames nobody
_ROW_CLEARS = re.compile(r"\b(?:not|no|never|fine|healthy|ok|okay|normal|ruled\s+out|unrelated|unaffected|unchanged|"
                         r"nothing|none|n/a)\b")


def _table_rows_blamed(sentences: Sequence[reading.Sentence], others: set[str], involved: set[str]) -> set[str]:
    """The other components a Markdown table's rows blame (red-team round 21: "| cart | connection pool exhausted |",
    "| currency | crash loop after a bad config push |" under a correct paragraph): a row whose first cell is another
    component and whose other cells say something is broken (a fault word, a broken state, a blame cue, a mechanism),
    not a row about what the fault does to it (its other cells name the faulty component: "| checkout | lookups to
    product-catalog fail |") nor one that clears it. A row of a table is the writer's claim as much as a sentence."""
    blamed: set[str] = set()
    rows = [s for s in sentences if not s.hedged and s.flat.lstrip().startswith("|") and s.flat.count("|") >= 3]
    if len(rows) < 2:
        return blamed
    for s in rows[1:]:  # the first row is the header
        cells = [c.strip() for c in s.flat.strip().strip("|").split("|")]
        if len(cells) < 2 or "#" in s.flat or re.fullmatch(r"[\s:-]*", cells[0]):
            continue
        rest = " . ".join(cells[1:])
        named = {c for c in others if text.component_pattern(c).search(cells[0])}
        if not named or _ROW_CLEARS.search(rest) or any(text.component_pattern(c).search(rest) for c in involved):
            continue
        if _FAULT_NOUNS.search(rest) or _asserts_a_fault(rest):
            blamed |= named
    return blamed


def _listed_under_cause(sentences: Sequence[reading.Sentence]) -> bool:
    """A "Root cause:" heading over a list of two items or more: each item is one of the causes it gives, whatever
    the heading's number (red-team round 16, finding 5: a singular heading over two bullets, one false)."""
    for heading in sentences:
        if heading.listed < 0 and re.fullmatch(r"\W*(?:the\s+)?(?:root[\s-]+)?cause\W*", heading.flat.strip()):
            after = [s for s in sentences if s.index > heading.index]
            # the list right under the heading (a list after a sentence of prose details that one cause)
            if after and after[0].listed >= 0 and len([s for s in after if s.listed == after[0].listed]) >= 2:
                return True
    return False


#: a change stated as done to something ("was lowered to", "has been changed", "were set to")
_SAID_CHANGED = re.compile(r"\b(?:was|were|has been|have been|had been|got|is now|are now)\s+(?:\w+\s+)?(?:lowered|raised|reduced|"
                           r"increased|changed|modified|set|switched|turned|flipped|edited|patched|"
                           r"added|rotated|revoked|renamed|tightened|loosened)\b")


# a changed value said with its participle, no verb: "memory: 12Mi (lowered from 256Mi)", "a memory limit lowered to 12Mi"
# (red-team round 19, finding 4: an "Evidence:" line, a heading): the writer states the change as much as "was lowered"
_CHANGED_VALUE = re.compile(r"\b" + _PARTICIPLE_VALUE)


_SEVERAL_FAULTS = re.compile(r"\b(?:two|three|several|multiple|2|3)\s+(?:separate\s+|independent\s+|distinct\s+)?"
                             r"(?:faults|causes|root causes|problems|defects|issues|changes)\b|\bboth\s+(?:faults|causes|problems)\b"
                             # a heading in the plural ("Root causes:", "## Root causes"): each item is one of them
                             r"|^\W*(?:the\s+)?root[\s-]+causes\b(?!\s+(?:of|for|are\s+(?:unknown|unclear)))")


# what says the effect comes first and its cause after: "X because Y", "X comes from Y", "X is caused by Y"
_EFFECT_BEFORE = re.compile(r"\s(?:because(?:\s+of)?|due\s+to|caused\s+by|as\s+a\s+result\s+of|stems?\s+from|stemm\w+\s+from|"
                            r"originat\w+\s+(?:from|in)|comes?\s+from|coming\s+from|came\s+from|is\s+the\s+result\s+of|"
                            r"results?\s+from|resulting\s+from|triggered\s+by|is\s+down\s+to)\b")
# nouns of a fault of another kind than a changed setting: a cause in their own right
_FAULT_NOUNS = re.compile(r"\b(?:corrupt\w*|leak\w*|bug|bugs|buggy|regression|overload\w*|deadlock\w*|race\s+condition|"
                          r"exhaust\w*|saturat\w*|contention|memory\s+pressure|noisy\s+neighbou?r)\b")


# a broken state said of something: "is exhausted", "are saturated", "has a memory leak", "was deadlocked"
_BROKEN_STATE = re.compile(r"\b(?:is|are|was|were|got|gets|became|becomes|has\s+been|have\s+been)\s+(?:\w+\s+)?"
                           r"(?:exhausted|saturated|deadlocked|corrupt(?:ed)?|overloaded|leaking|thrashing|wedged)\b"
                           r"|\b(?:has|have|had)\s+(?:a\s+)?(?:\w+\s+)?(?:leak|deadlock|race\s+condition|bug)\b")


def _another_cause(words: str, flat: str, t: GroundTruth, components: Sequence[str]) -> bool:
    """Does the cause part of an effect-first sentence name a cause other than the truth's: a mechanism of another
    fault family, a fault noun ("cache corruption", "a leak"), or a component the truth does not involve?"""
    if _FAULT_NOUNS.search(flat):
        return True
    own = {c.lower() for c in t.components} | {text.datastore_owner(c.lower()) for c in t.components}
    if any(text.component_pattern(c).search(flat) for c in components if c not in own):
        return True
    return any(family != t.fault and _match_any(words, patterns) for family, patterns in lexicon.MECHANISMS.items())


# a quoted message (three words or more: a quoted name is no evidence)
_QUOTED = re.compile(r"'[^'\s]*(?:\s+[^'\s]+){2,}\s*'|\"[^\"\s]*(?:\s+[^\"\s]+){2,}\s*\"|`[^`\s]*(?:\s+[^`\s]+){2,}\s*`")


def _inference(cause: str) -> bool:
    """Is the part before "so" quoted evidence the writer reasons from (an error message in quotes, no fault
    asserted outside them)?"""
    return bool(_QUOTED.search(cause)) and not _asserts_a_fault(_QUOTED.sub(" ", cause))

_OR_BETWEEN = re.compile(r"\b(?:or|or maybe|or perhaps|or else|vs|versus)\b")


def _mechanisms_as_alternatives(words: str, family_spans: Sequence[tuple[str, tuple[int, int]]]) -> bool:
    """Are two different mechanisms offered as alternatives ("X or Y") in this sentence? An "or" under a
    negation ("not A or B") offers nothing."""
    ordered = sorted(family_spans, key=lambda item: item[1][0])
    for (first, (_a, end)), (second, (start, _b)) in zip(ordered, ordered[1:], strict=False):
        between = words[end:start]
        if first != second and _OR_BETWEEN.search(between) and not _NEGATED_LIST.search(words[:end]):
            return True
    return False


@functools.lru_cache(maxsize=1)
def _families_of_pattern() -> dict[str, frozenset[str]]:
    owners: dict[str, set[str]] = {}
    for family, patterns in lexicon.MECHANISMS.items():
        for pattern in patterns:
            owners.setdefault(pattern, set()).add(family)
    return {p: frozenset(f) for p, f in owners.items()}


def _a_sibling_decides(words: str, matched: str, truth: GroundTruth, vocab: Sequence[str], truth_faults: set[str]) -> bool:
    """Was the truth's mechanism read only by a phrase another fault family shares, while that family's own
    phrases (none of the truth's) are in the sentence too?"""
    owners = _families_of_pattern()
    siblings = owners.get(matched, frozenset()) - {truth.fault} - truth_faults
    if not siblings:
        return False
    if _match_any(words, [p for p in vocab if not owners.get(p, frozenset()) - {truth.fault}]):
        return False  # the truth's own distinctive words are there too
    own = set(vocab)
    return any(_match_any(words, [p for p in lexicon.MECHANISMS[f] if p not in own]) for f in siblings)


def _truth_words(truths: Sequence[GroundTruth]) -> frozenset[str]:
    """The stems (first six letters) of the words of the truths' own mechanism statements."""
    return frozenset(w[:6] for t in truths for w in re.findall(r"[a-z]{4,}", text.flatten(t.mechanism)))


def _said_by_truth(matched: str, own_words: frozenset[str]) -> bool:
    words = [w for w in re.findall(r"[a-z]{4,}", matched)]
    return bool(words) and all(w[:6] in own_words for w in words)


# a setting named as what changed: "sets maxPods to 10", "ipipMode set to Always", "imagefs.inodesFree=90%"
_FIELD = r"(?:[a-z]+(?:[A-Z][a-z0-9]*)+|[a-z][a-z0-9]*(?:\.[a-zA-Z][a-zA-Z0-9]*)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)"
_FIELD_SET = re.compile(
    rf"\b(?:sets?|setting|changed|changes|lowered|raised|reduced|increased|put)\s+(?:the\s+|its\s+)?`?({_FIELD})`?"
    rf"|(?<![\w.])`?({_FIELD})`?(?:\s+\S+){{0,6}}?\s+(?:(?:is|was|were|got|has been)\s+)?(?:(?:set|changed|lowered|raised|"
    # a setting said to be out of range is said to be what changed: "timeoutSeconds too low (10s)"
    r"reduced|increased)\s+to\b|(?:far\s+|much\s+)?too\s+(?:low|high|small|large|short|long|big|tight)\b)"
    r"|(?<![\w.])`?(" + _FIELD + r")`?\s*=\s*\S")


def _record_leaves(value: Any) -> list[str]:
    """Every key and scalar of a record (nested mappings and lists walked through), as text."""
    out: list[str] = []
    if isinstance(value, Mapping):
        for key, inner in value.items():
            out.append(str(key))
            out += _record_leaves(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            out += _record_leaves(inner)
    elif value is not None:
        out.append(str(value))
    return out


def _truth_fields(truth: GroundTruth) -> str:
    """Everything the truth names (its keys, values, mechanism, keywords and vocabulary), flattened."""
    keys = _record_leaves(dict(truth.mutated_values))
    return " ".join(text.flatten(x) for x in [*keys, truth.mechanism, *truth.keywords, *vocabulary(truth)])


_WHOLE = re.compile(r"\b(?:whole|entire|every|all)\b")
_ONLY_ONE = re.compile(r"\bonly\s+(?:for|to|on|in|of|about)\s+(?:the\s+|one\s+|a\s+|its\s+)?[\w.-]+|\bfor\s+(?:[\w.-]+\s+){1,6}?only\b"
                       r"|\bjust\s+(?:for|to)\s+(?:the\s+|one\s+)?[\w.-]+")


def _narrower_scope(flat: str, t: GroundTruth) -> bool:
    """Does the truth's cause apply to a whole (every name of a zone, all nodes) while the sentence says it applies to
    one thing only ("a template NXDOMAIN only for home-timeline-service")?"""
    parts = concepts.split_effect(t.mechanism)
    cause = text.flatten(parts[0] if parts else t.mechanism)
    return bool(_WHOLE.search(cause)) and bool(_ONLY_ONE.search(flat))


# the kinds of actor inside a pod that do something to it (beside _ACTORS, which change a workload from outside)
_POD_ACTORS = re.compile(r"(?<![a-z0-9])(?:init\s*containers?|init\s+ctrs?|sidecars?|sidecar\s+containers?)(?![a-z0-9])")


def _another_actor(words: str, span: tuple[int, int], t: GroundTruth) -> bool:
    """Is the one doing what the sentence says, before or at the mechanism's words, an actor of a kind the truth's own
    statement, its fault and its changed fields never mention? Its vocabulary is not asked: two sibling faults share
    words ("init container" and "/dev/shm"), not actors."""
    known = " ".join([text.flatten(t.mechanism), text.flatten(t.fault), text.flatten(t.resource_kind),
                      *(text.flatten(k) for k in _field_names(t.mutated_values))])
    # a bracketed aside lists names ("four webhooks (labels, sidecars, defaults, audit)"), not who acts
    before = re.sub(r"\([^()]*\)", lambda m: " " * len(m.group(0)), words[: span[1]])
    for found in _POD_ACTORS.finditer(before):
        kind = "sidecar" if "sidecar" in found.group(0) else "init"
        if kind not in known:
            return True
    # an admission webhook that rewrites the limit is the webhook's fault, not a limit set too small
    for found in _WRITING_ACTORS.finditer(before):
        if found.group(1).split()[-1].rstrip("s") not in known:
            return True
    return False


#: actors that write into other objects, said as the subject of what was done ("the mutating webhook rewrites ...")
_WRITING_ACTORS = re.compile(r"(?<![a-z0-9])((?:mutating |admission )?webhooks?|cronjobs?|cron jobs?)(?![a-z0-9])"
                             r"(?=[^.;]{0,60}\b(?:rewrites?|patch(?:es)?|overwrites?|sets?|changes?|re-?applies)\b)")


# fields that come in pairs on one object: saying the other one of the pair is a different fault of the same object
_TWIN_FIELDS = (
    (re.compile(r"\b(?:memory|cpu|resources?)\s+requests?\b|\brequests?\s+(?:of|for)\s+(?:memory|cpu)\b"),
     re.compile(r"\b(?:memory|cpu|resources?)\s+limits?\b|\blimits?\s+(?:of|for|on)\s+(?:memory|cpu)\b")),
    (re.compile(r"\breadiness\s*(?:probe|check)?\b"), re.compile(r"\bliveness\s*(?:probe|check)?\b")),
    (re.compile(r"\bingress\b"), re.compile(r"\begress\b")),
    # a Service's targetPort (the pods' side) and the port it exposes, or the container's own port: "the Service
    # listens on the wrong front port", "the container was changed to listen on 9091"
    (re.compile(r"\btarget\s*ports?\b"),
     re.compile(r"\b(?:front|outside|outer|public|exposed|external|incoming|container)\s*ports?\b")),
)


# a mechanism that takes something away (its absence is the fault): "has no X" states it, not denies it
_ABSENCE = re.compile(r"\b(?:missing|miss|removed?|deleted?|revoked?|dropped|drop|lacks?|lacking|lost|absent|without|no|"
                      r"never|stripped|unset|empty|cleared?)\b")
_HAS_NO = re.compile(r"\b(?:have|has|had|carry|carries|carried)\s+no\s+(?:[\w-]+\s+){0,2}$")


def _presence_denied(flat: str, span: tuple[int, int], truth: GroundTruth) -> bool:
    """Does the sentence say its subject *has no* of what the fault added ("the nodes have no taint", "the namespace has
    no NetworkPolicy")? For a fault that takes something away ("missing permission"), "has no" states the fault."""
    return bool(_HAS_NO.search(flat[: span[0]])) and not _ABSENCE.search(text.flatten(truth.mechanism))


def _sibling_field(flat: str, truth: GroundTruth) -> bool:
    """Does the sentence name the twin of the truth's field (a limit for a request, liveness for readiness, egress for
    ingress) and not the truth's own? The truth's field is read from its mechanism and the keys of its values."""
    own = " ".join([text.flatten(truth.mechanism), *(text.flatten(k) for k in _field_names(truth.mutated_values))])
    for first, second in _TWIN_FIELDS:
        for mine, twin in ((first, second), (second, first)):
            if mine.search(own) and not twin.search(own) and twin.search(flat) and not mine.search(flat):
                return True
    return False


# Fields of one object, grouped by the object they belong to (issue #35, round 21): each group's fields are the
# settings an SRE names of that object, so a sentence naming one of them names *that* field. A truth's fields are read
# from what it says was done (its statement, its fault, the fields its change record changed), never per problem. The
# group applies where the sentence is about its object (the scope words, when given).
_FIELD_GROUPS: tuple[tuple[re.Pattern[str] | None, dict[str, re.Pattern[str]]], ...] = tuple(
    (re.compile(scope) if scope else None, {name: re.compile(pattern) for name, pattern in fields.items()})
    for scope, fields in (
        # a container's resources: counted in CPU or in memory (a JVM's heap is the process's own setting)
        (None, {
            "cpu": r"\bcpus?[\s.]+(?:limits?|requests?|quotas?|ceilings?|caps?|shares?)\b"
                   r"|\b(?:limits?|requests?)[\s.]+(?:of\s+|for\s+|on\s+)?(?:the\s+)?cpus?\b|\bcpus\b|\bmillicores?\b",
            "memory": r"\b(?:memory|mem|ram)[\s.]+(?:limits?|requests?|ceilings?|caps?|quotas?)\b"
                      r"|\b(?:limits?|requests?)[\s.]+(?:of\s+|for\s+|on\s+)?(?:the\s+)?(?:memory|mem|ram)\b",
            "heap": r"(?<![a-z0-9])-?xmx\w*|\b(?:max(?:imum)?|jvm|java)\s+heap\b|\bheap\s+size\b",
        }),
        # a probe: where it asks (path, port) or how hard it checks (delay, period, threshold, timeout)
        (r"\bprobes?\b|\bliveness\w*|\breadiness\w*|\bstartup\s*probe\b|\bhealth\s*checks?\b", {
            "endpoint": r"\bpaths?\b|\bendpoints?\b|\burls?\b|\bports?\b|\bhttp\s*get\b|\bhealthz\w*",
            "timing": r"\binitial\s*delay\w*|\bperiod\w*|\bthresholds?\b|\btimeouts?\b|\baggressive\b|\bintervals?\b"
                      r"|\bevery\s+(?:\d+\s*)?(?:second|sec|s)\b|\bno\s+(?:initial\s+)?(?:delay|grace)\b|\bgrace\b|\btoo\s+(?:often|soon|early|fast)\b",
        }),
        # what network emulation does to a node's packets
        (None, {
            "delay": r"\bdelay\w*|\blatency\b|\bjitter\b|\bheld\s+back\b",
            "loss": r"\bloss\b|\bpackets?\s+(?:are\s+|get\s+)?(?:lost|dropped)\b|\b(?:drops?|dropping|losing)\s+(?:\S+\s+){0,3}?packets?\b",
            "corrupt": r"\bcorrupt\w*\s+packets?\b|\bpackets?\s+(?:are\s+)?corrupt\w*",
            "duplicate": r"\bduplicat\w*\s+packets?\b|\bpackets?\s+(?:are\s+)?duplicat\w*",
            "bandwidth": r"\bbandwidth\b",
        }),
        # the Pod Security Admission mode: enforce rejects, warn and audit only report
        (r"pod\s*security|\bpsa\b|\bpss\b", {"enforce": r"\benforce\b", "warn": r"\bwarn\b", "audit": r"\baudit\b"}),
        # a database server's client authentication: TLS required, or the password method
        (None, {
            "tls": r"\btls\b|\bssl\b|\bhost(?:no)?ssl\b|\bencrypt\w*",
            "method": r"\bmd5\b|\bscram\w*|\bauth\w*\s+method\b|\bpassword\s+method\b|\bpeer\s+auth\w*",
        }),
        # a kubelet's thresholds: eviction, or image garbage collection
        (r"kubelet", {
            "eviction": r"\beviction\w*|\bnodefs\w*|\bimagefs\w*|\bmemory\.available\b",
            "image-gc": r"\bimage\s*gc\w*|\bimagegc\w*|\bimage\s+garbage\b|\bgarbage\s+collect\w*",
        }),
        # a Service's ports and the container's own: the Service side changed, or the container said to listen elsewhere
        (None, {
            "service-port": r"\btarget\s*ports?\b|\bservices?(?:'s)?\s+(?:\w+\s+)?ports?\b|\bports?\s+of\s+the\s+service\b",
            "container-listen": r"\bcontainers?\s+(?:(?:was|were|has\s+been|got|is)\s+)?(?:now\s+|(?:changed|moved|reconfigured|"
                                r"switched)\s+to\s+)+listen\w*|\bcontainer\s*ports?\s+(?:was|were|has\s+been|got|is\s+now)\s+"
                                r"(?:changed|moved|set)\b",
        }),
        # a node's connection settings: the local port range, the listen backlog, the conntrack table, kube-proxy's mode
        (None, {
            "port-range": r"\bip\s*local\s*port\s*range\b|\bport\s+range\b|\bephemeral\s+ports?\b|\blocal\s+ports?\b",
            "backlog": r"\bsomaxconn\b|\blisten\s+backlog\b|\bsyn\s+backlog\b",
            "conntrack": r"\bconntrack\w*|\bmax\s*per\s*core\b",
            "proxy-mode": r"\buserspace\b|\bipvs\b|\bproxy\s*mode\b",
        }),
        # a volume: its storage class, its size, its access mode
        (None, {
            "class": r"\bstorage\s*class\w*",
            "size": r"\bstorage\s*size\b|\b(?:volume|disk|pvc|claim)\s+size\b|\b(?:volume|disk|pvc|claim)\s+(?:is\s+)?too\s+"
                    r"(?:small|big|large)\b|\bshared\s+disk\s+(?:\S+\s+){0,6}?too\s+(?:small|big|large)\b",
            "access-mode": r"\bread\s*write\s*once\b|\brwo\b|\baccess\s*modes?\b|\bmulti\W?attach\b",
        }),
        # an Ingress: its class, its host, its backend (the Service a path rule sends to) and that backend's port
        (r"\bingress\w*", {
            "class": r"\bingress\s*class\w*|\bclass\s*names?\b|\bclass\b|\bcontroller\b",
            "host": r"\bhosts?\b|\bhost\s*names?\b|\bdomains?\b",
            "backend": r"\bbackends?\b|\bservices?\b|\bpath\s+rules?\b|\bpaths?\b",
            "port": r"\bports?\b",
        }),
    )
)

# an environment variable's name as a shell writes it: DB_PASSWORD, PRODUCT_CATALOG_ADDR
_ENV_NAME = re.compile(r"(?<![\w.-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w-])")


def _truth_env_names(values: Any) -> set[str]:
    """The environment variables a truth's change is about: the values of its ``env``-like keys that are written like
    one, and its keys written like one."""
    out: set[str] = set()

    def visit(value: Any, key: str) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                if _ENV_NAME.fullmatch(str(k)):
                    out.add(str(k))
                visit(v, str(k))
        elif isinstance(value, list | tuple):
            for v in value:
                visit(v, key)
        elif isinstance(value, str) and "env" in key.lower() and _ENV_NAME.fullmatch(value):
            out.add(value)

    visit(values, "")
    return out


def _other_env_only(sentences: Sequence[reading.Sentence], truths: Sequence[GroundTruth]) -> list[str]:
    """The faults about environment variables (their values name them: ``PRODUCT_CATALOG_ADDR``) whose variables no
    asserted sentence names while one names another variable: the writer says which setting it means, and it is not the
    truth's (a sentence-level reading is :func:`_another_field_of_object`; this one sees a record split over lines)."""
    asserted = [s for s in sentences if not s.hedged and not s.action]
    said = {name for s in asserted for name in _ENV_NAME.findall(s.raw)}
    out: list[str] = []
    for t in truths:
        envs = _truth_env_names(t.mutated_values)
        if not envs or not said:
            continue
        if any(n in e or e in n for n in said for e in envs):
            continue
        if any(text.flatten(e).lower() in s.flat for s in asserted for e in envs):
            continue
        out.append(t.fault)
    return out


def _another_field_of_object(s: reading.Sentence, cause_end: int, truth: GroundTruth) -> bool:
    """Does the sentence claim a field of the truth's object other than the truth's own (a CPU limit for a memory limit,
    a probe's path for its timings, packet loss for a delay, the warn label for enforce, another environment variable),
    in what it says is the cause, naming none of the truth's own fields of that object? A correct text that also names a
    healthy field ("the CPU limit is fine, the memory limit was cut") names the truth's too, and what it rules out is
    masked. The twin of the truth's field (a limit for a request) is :func:`_sibling_field`."""
    flat = s.flat
    cause = flat[:cause_end]
    own = " ".join([text.flatten(truth.mechanism), truth.fault.replace("-", " "),
                    *(text.flatten(concepts.split_compounds(f)) for f in _differing_fields(truth))]).lower()
    for scope, fields in _FIELD_GROUPS:
        if scope is not None and not scope.search(flat):
            continue
        mine = {name for name, pattern in fields.items() if pattern.search(own)}
        if not mine:
            continue
        if any(fields[name].search(flat) for name in mine):
            continue
        if any(pattern.search(cause) for name, pattern in fields.items() if name not in mine):
            return True
    envs = _truth_env_names(truth.mutated_values)
    if envs:
        said = {name for name in _ENV_NAME.findall(s.raw) if text.flatten(name).lower() in cause}
        own_said = any(text.flatten(e).lower() in flat for e in envs)
        foreign = [n for n in said if not any(n in e or e in n for e in envs)]
        if foreign and not own_said:
            return True
    return False


def _other_field(raw: str, flat: str, truth: GroundTruth) -> bool:
    """Does the sentence say a setting the truth never names was changed, and name none of the truth's own?"""
    named = [f for m in _FIELD_SET.finditer(raw) for f in m.groups() if f]
    if not named:
        return False
    known = _truth_fields(truth)

    def is_known(f: str) -> bool:
        # a field named by its path ("spec.replicas", "spec.template.spec.dnsPolicy") is its last part, the truth's
        # own field when that is one (twenty-second round)
        return text.flatten(f) in known or text.flatten(f.rsplit(".", 1)[-1]) in known

    foreign = [f for f in named if not is_known(f)]
    if not foreign:
        return False
    own = [f for f in re.findall(_FIELD, raw) if is_known(f) and len(f) > 3]
    return not own


# a switch turned on (the truth's change), and a sentence saying that switch is off, or on
_TURNED_ON = re.compile(r"\b(?:turned|switched|flipped|set)\s+(?:\S+\s+){0,4}?on\b|\benabled?\b|\bactivated\b")
_SAID_OFF = re.compile(r"\b(?:is|are|was|were|been|be|stays?|stayed|remains?|remained|left|still|defaults?\s+to|"
                       r"set\s+to|switched|turned|flipped)\s+(?:(?!not\b|no\b|never\b)\S+\s+)?[\"']?(?:off|false|disabled)\b|(?<!not )\bdisabled\b|"
                       r"=\s*[\"']?false\b"
                       # "shows variant off", "defaultVariant off": what flagd serves is the off variant
                       r"|\b(?:shows?|showing|serves?|serving)\s+(?:\S+\s+)?[\"']?off\b|\bvariant\s+[\"']?off\b"
                       # "is not on", "was never turned on", "isn't enabled": the switch denied its on state
                       r"|\b(?:is|are|was|were|has|have|had)(?:\s+not|n't)\s+(?:been\s+)?(?:on|enabled|active|turned\s+on|switched\s+on)\b"
                       r"|\bnever\s+(?:been\s+)?(?:turned|switched|flipped)\s+on\b")
_SAID_ON = re.compile(r"\b(?:turned|switched|flipped|set)\s+(?:\S+\s+){0,4}?(?:on|true)\b|\benabled?\b|\bactivated\b"
                      r"|\b(?:is|are|was|were|been|be|stays?|left|still|now)\s+(?:(?!not\b|no\b|never\b)\S+\s+)?[\"']?(?:on|true)\b|=\s*[\"']?true\b"
                      r"|\bnot\s+(?:off|false|disabled)\b")


# the workload kinds an operator writes from a custom resource, as a diagnosis names them
_GENERATED_KINDS = {"StatefulSet": r"stateful\s?sets?|sts", "Deployment": r"deployments?|deploy", "DaemonSet": r"daemon\s?sets?|ds"}
_BUILT_IN_KINDS = frozenset({"deployment", "statefulset", "daemonset", "replicaset", "pod", "service", "configmap", "secret",
                             "node", "job", "cronjob", "persistentvolume", "persistentvolumeclaim", "ingress", "role",
                             "networkpolicy", "serviceaccount", "namespace"})


def _generated_workload_only(flat: str, truth: GroundTruth) -> bool:
    """Does the sentence put the change in a workload (the one an operator derives from the truth's custom resource, or
    any other workload kind) of a truth whose statement names an operator, naming not the resource (its kind, "custom
    resource", "CR") and either not the operator or the operator's own Deployment? The fault is in the resource; a fix
    to the generated StatefulSet is undone by the operator."""
    kind = truth.resource_kind or ""
    mechanism = truth.mechanism
    if not kind or kind.lower() in _BUILT_IN_KINDS or "operator" not in mechanism.lower():
        return False
    # the workload the operator derives, or a workload kind the statement never names (the operator's own Deployment
    # "scaled to 100000" is not the custom resource's replicas)
    generated = [pattern for name, pattern in _GENERATED_KINDS.items() if name != kind]
    # "a StatefulSet update strategy" names a type of value, not the generated object: only "the orbit-db StatefulSet"
    if not generated or not re.search(rf"(?<![a-z0-9])(?<!\ba )(?<!\ban )(?:{'|'.join(generated)})(?![a-z0-9])", flat):
        return False
    words = text.flatten(concepts.split_compounds(kind)).lower()
    operator = str(truth.mutated_values.get("operator", "")) if isinstance(truth.mutated_values, Mapping) else ""
    resource = [re.escape(words), re.escape(kind.lower()), r"custom\s+resources?", r"crs?", r"crds?"]
    runners = [r"operators?"] + ([re.escape(text.flatten(operator))] if operator else [])
    if re.search(rf"(?<![a-z0-9])(?:{'|'.join(resource)})(?![a-z0-9])", flat):
        return False
    # the operator's own workload ("the datastore-operator Deployment was scaled to 100000") is not where the change is
    own = re.search(rf"(?<![a-z0-9])(?:{'|'.join(runners)})(?:'s)?\s+(?:{_GENERATED_KINDS['Deployment']})(?![a-z0-9])", flat)
    return bool(own) or not re.search(rf"(?<![a-z0-9])(?:{'|'.join(runners)})(?![a-z0-9])", flat)


def _old_value_only(flat: str, truth: GroundTruth) -> bool:
    """Does the sentence give the changed field the value it had before the fault (``NoSchedule`` for the injected
    ``NoScheduling``), and none of the values it has now? Words only: a bare number before ("3") says too little."""
    values = truth.mutated_values if isinstance(truth.mutated_values, Mapping) else {}
    if "before" not in values or "after" not in values:
        return False
    after = {str(v).lower() for v in _scalars([values["after"]])}
    before = [str(v) for v in _scalars([values["before"]]) if str(v).lower() not in after and re.search(r"[A-Za-z]", str(v))
              and len(str(v)) >= 3]
    said_before = any(reading.find_pattern(flat, v, allow_negated=True) for v in before)
    said_after = any(reading.find_pattern(flat, v, allow_negated=True) for v in after if len(v) >= 2)
    return said_before and not said_after


def _switched_on(truth: GroundTruth) -> bool:
    """Does the truth turn a switch on (a flag, requirepass): its cause part says so, or a value goes to on/true?"""
    parts = concepts.split_effect(truth.mechanism)
    if _TURNED_ON.search(text.flatten(parts[0] if parts else truth.mechanism)):
        return True
    return any(str(v).lower() in ("on", "true") for v in _scalars(dict(truth.mutated_values)))


_TURNED_BEFORE = re.compile(r"\b(?:turn\w*|switch\w*|flip\w*|toggl\w*|set|setting|put\w*|disabl\w*)\s+"
                            r"(?:the\s+|flag\s+|switch\s+|setting\s+)*$")


def _opposite_state(flat: str, truth: GroundTruth) -> bool:
    """Does the sentence say the switch the truth turned on is off (false, disabled), and nowhere that it is on? The
    right field with the other value is not the truth's change ("the flag is off, so the old path runs")."""
    if not _switched_on(truth):
        return False
    if _SAID_OFF.search(flat) and not _SAID_ON.search(flat):
        return True
    # the truth's own switch named with "off" right after it, though another switch in the sentence is on
    # ("productCatalogFailure off, but recommendationCacheFailure on"): the state said of the name is its state, and
    # the one on is a decoy (round 25); never "off -> on" or "off to 100%", which tells the change itself
    for value in identifying_values(truth):
        for form in renderings(value):
            name = re.escape(form.lower())
            said_off = re.search(rf"(?<![\w-]){name}\s*(?:[:=]\s*|(?:is|was|stays?|still|remains?)\s+)?[\"'`]?(?:off|false|disabled)\b"
                                 rf"(?!\s*(?:->|→|=>|,?\s*so\s+(?:on|true|enabled|\d)|to\b|then\b|before\b|until\b|earlier\b|originally\b|by default\b))", flat)
            # "turning tt-feat-5 off fixed it": an action taken (the fix), not the state the switch was found in
            said_on = re.search(rf"(?<![\w-]){name}\s*(?:[:=]\s*|(?:is|was|now)\s+)?[\"'`]?(?:on|true|enabled|100\s?%)\b", flat)
            if said_off and not said_on and not _TURNED_BEFORE.search(flat[:said_off.start()]):
                return True
    return False


def _chain(sentences: Sequence[reading.Sentence], mechanism_sentences: Sequence[int],
           truths: Sequence[GroundTruth]) -> tuple[str | None, str | None]:
    """A connective linking the asserted mechanism to a symptom, within the mechanism's sentence and
    the two after it: (evidence, the sentences that carry it)."""
    symptoms = list(lexicon.SYMPTOMS) + [s for t in truths for s in t.symptoms]
    for index in mechanism_sentences:
        window = [s for s in sentences[index : index + 3] if not s.hedged]
        flat = " . ".join(s.flat for s in window)
        connective = _match_any(flat, lexicon.CONNECTIVES)
        symptom = _match_any(flat, symptoms) if connective else None
        if connective and symptom:
            return f"{connective[0]!r} ... {symptom[0]!r} in {flat[:200]!r}", " ".join(x.raw for x in window)
    return None, None


def _gates(r: Reading, truths: Sequence[GroundTruth]) -> dict[str, Any]:
    """The hard gates: what must hold before any checklist can pass."""
    visible = {c.lower() for t in truths if t.user_visible for c in t.components} or r.truth_components
    gates: dict[str, Any] = {
        "component_asserted": bool(visible & r.asserted),
        "hedge": None,
        "kitchen_sink": None,
        "injection": r.injection,
        "prose": bool(r.sentences),
    }
    hedged_truth = r.hedged_components & r.truth_components
    if hedged_truth and (len(r.hedged_components) >= 2 or not r.asserted):
        gates["hedge"] = "hedges between " + ", ".join(sorted(r.hedged_components))
    elif not r.asserted and hedged_truth:
        gates["hedge"] = "names the faulty component only in a hedge"
    elif r.hedged_others:
        gates["hedge"] = "offers other components as possible causes: " + ", ".join(sorted(r.hedged_others))
    if len(r.other_mechanisms) >= 2:
        gates["kitchen_sink"] = "asserts several mechanisms: " + ", ".join(sorted(r.other_mechanisms))
    elif r.added_mechanisms:
        gates["kitchen_sink"] = "adds another cause to the fault's: " + ", ".join(sorted(r.added_mechanisms))
    elif r.over_broad:
        gates["kitchen_sink"] = "over-broad blame: " + r.over_broad
    elif r.blamed_unrelated:
        gates["kitchen_sink"] = "blames components that are not faulty: " + ", ".join(sorted(r.blamed_unrelated))
    elif foreign := secondcause.foreign_claims(s.raw for s in r.sentences):
        # a claim the rules cannot read may be a second cause (red-team rounds 17 and 18: "Außerdem wurde das
        # Speicherlimit von geo auf 12Mi gesenkt"): the judge reads English, so it cannot clear it
        gates["kitchen_sink"] = "states in another language what the judge cannot weigh: " + foreign[0][:80]
    # a problem of several faults: a diagnosis of one of them is incomplete (red-team round 12, finding 4: one fault
    # named fully scored 0.78-0.89 with "names every fault" answered no)
    # (a latent fault, one users do not meet yet, may be left out: the visible ones are the incident)
    missing = sorted({c.lower() for t in truths if t.user_visible for c in t.components} - r.asserted)
    gates["incomplete"] = ("does not find every fault: " + ", ".join(missing)) if len(truths) > 1 and missing else None
    gates["passed"] = bool(gates["component_asserted"] and gates["prose"] and not gates["hedge"]
                           and not gates["kitchen_sink"] and not gates["injection"] and not gates["incomplete"])
    return gates


_LOCALIZATION = {"loc_component", "loc_namespace", "loc_kind", "D1-Q1", "D1-Q2", "D1-Q3"}
_CHARACTERIZATION = {"char_mechanism", "char_values", "char_chain", "D2-Q1", "D2-Q2", "D2-Q3"}
_SCOPE = {"scope_no_unrelated", "scope_all_faults", "scope_priority", "D3-Q1", "D3-Q2", "D3-Q3"}


def _apply_gates(question: str, r: Reading, found: _Answer, rubric: str) -> _Answer:
    """A failed gate answers "no" to the questions it makes meaningless."""
    g = r.gates
    if g.get("injection"):
        return _Answer(False, f"gate: the diagnosis addresses the grader ({g['injection']!r})")
    if not g.get("prose"):
        return _Answer(False, "gate: no explanation in prose (only pasted tool output)")
    if g.get("hedge") and (question in _SCOPE or question in ("loc_component", "D1-Q1", "D1-Q2")):
        return _Answer(False, f"gate: {g['hedge']}")
    if g.get("kitchen_sink") and (question in _SCOPE or (question in _CHARACTERIZATION and "mechanisms" in g["kitchen_sink"])):
        return _Answer(False, f"gate: {g['kitchen_sink']}")
    if g.get("incomplete") and (question in _SCOPE or question in ("char_mechanism", "D2-Q1")):
        return _Answer(False, f"gate: {g['incomplete']}")
    if not g.get("component_asserted") and question in _LOCALIZATION:
        return _Answer(False, "gate: the faulty component is not asserted as the cause" + (
            f" ({found.evidence})" if not found.answer else ""))
    return found


class _SregymQuestions:
    """The project's nine questions, answered from a :class:`Reading`."""

    def __init__(self, r: Reading, truths: Sequence[GroundTruth], app_namespace: str) -> None:
        self.r, self.truths, self.app_namespace = r, truths, app_namespace

    def ask(self, question: str) -> _Answer:
        return getattr(self, "q_" + question.replace("-", "_"))()

    # localization
    def q_loc_component(self) -> _Answer:
        visible = [t for t in self.truths if t.user_visible] or list(self.truths)
        wanted = {c.lower() for t in visible for c in t.components}
        hit = sorted(wanted & self.r.asserted)
        if hit:
            return _Answer(True, "asserts the faulty component(s) as the cause: " + ", ".join(hit))
        elsewhere = sorted(wanted & {m.component for m in self.r.mentions})
        if elsewhere:
            return _Answer(False, "mentions " + ", ".join(elsewhere) + " only as healthy, as a victim or in a hedge")
        return _Answer(False, "does not name " + " or ".join(sorted(wanted)))

    def q_loc_namespace(self) -> _Answer:
        r = self.r
        namespaces = sorted({t.namespace for t in self.truths if t.namespace})
        for ns in namespaces:
            found = text.find_phrase(r.flat, ns, allow_negated=True)
            if found:
                return _Answer(True, f"names namespace {ns!r}: {found!r}")
        other = _other_namespace(text.normalize(r.prose), namespaces)
        if other:
            return _Answer(False, f"points at namespace {other!r}, the fault is in {', '.join(namespaces)}")
        if r.asserted and all(ns == self.app_namespace for ns in namespaces):
            return _Answer(True, "namespace implied: the app has one namespace and the right component is asserted", 0.6)
        return _Answer(False, "namespace not stated and no faulty component asserted")

    def q_loc_kind(self) -> _Answer:
        for t in self.truths:
            kind = t.resource_kind.lower()
            terms = [t.resource_kind, *lexicon.KIND_TERMS.get(kind.replace(" ", ""), ()), *lexicon.KIND_TERMS.get(kind, ()),
                     *lexicon.LAYER_TERMS.get(t.layer, ())]
            terms += re.findall(r"[a-z]{4,}", kind)
            for term in terms:
                found = text.find_phrase(self.r.flat, term)
                if found:
                    return _Answer(True, f"identifies {t.resource_kind} ({t.layer}) via {term!r}: {found!r}")
        if self.r.mechanism:  # the mechanism itself names the resource ("its replicas were set to 0")
            return _Answer(True, "the asserted mechanism identifies the resource", 0.7)
        kinds = ", ".join(sorted({f"{t.resource_kind} ({t.layer})" for t in self.truths}))
        return _Answer(False, f"does not identify the resource kind or layer: {kinds}")

    # characterization
    def q_char_mechanism(self) -> _Answer:
        if self.r.mechanism:
            fault, evidence = next(iter(self.r.mechanism.items()))
            return _Answer(True, f"asserts the mechanism of {fault} about its component: {evidence}")
        return _Answer(False, "mechanism not asserted about the faulty component: expected "
                       + "; ".join(t.mechanism for t in self.truths))

    def q_char_values(self) -> _Answer:
        # a component's name is not a concrete value ("role geo" on postgres-geo), and a value is a
        # detail of the mechanism: without the mechanism it characterises nothing
        names = {m.component for m in self.r.mentions} | self.r.truth_components
        values = [v for t in self.truths for v in concrete_values(t) if v.lower() not in names]
        # a node or pod name says where, not what changed: it counts only when the truth has nothing else
        where = {str(x).lower() for t in self.truths for k, v in t.mutated_values.items()
                 if str(k).lower() in _LOCATION_KEYS for x in _scalars(v)}
        values = [v for v in values if v.lower() not in where] or values
        if not self.r.mechanism:
            return _Answer(False, "no mutated value counts without the right mechanism")
        if not values:
            return _Answer(True, "no concrete mutated values in the truth; follows the mechanism", 0.6)
        identifying = [v for t in self.truths for v in identifying_values(t)]
        if identifying:  # the value that tells the fault from its siblings must be the one stated (a flag's name)
            for value in identifying:
                for rendering in renderings(value):
                    found = text.find_phrase(self.r.flat_values, rendering, allow_negated=True)
                    if found:
                        return _Answer(True, f"states the identifying value {value!r}: {found!r}")
            # the mechanism is read only when the value is named (`_identity_unnamed`): here by its words or a record's field
            return _Answer(True, "names the identifying value by its words: " + ", ".join(identifying), 0.8)
        for value in values:
            found = text.find_phrase(self.r.flat_values, value, allow_negated=True)
            if found:
                return _Answer(True, f"states mutated value {value!r}: {found!r}")
        for t in self.truths:
            relative = _relative_change(self.r.flat_values, t)
            if relative:
                return _Answer(True, f"states the change as its difference: {relative[0]!r}")
        found_quantity = quantity.find_quantity(self.r.flat_values, {k: v for t in self.truths for k, v in t.mutated_values.items()})
        if found_quantity:
            return _Answer(True, f"states mutated value {found_quantity[0]!r} as {found_quantity[1]!r}")
        return _Answer(False, "states none of the mutated values: " + ", ".join(values[:6]))

    def q_char_chain(self) -> _Answer:
        if not self.r.mechanism:
            return _Answer(False, "no cause-symptom chain without the right mechanism")
        if self.r.chain:
            return _Answer(True, "links the mechanism to a symptom: " + self.r.chain)
        return _Answer(False, "states the mechanism but no connective to what it causes")

    # scope
    def q_scope_no_unrelated(self) -> _Answer:
        r = self.r
        if r.over_broad:
            return _Answer(False, "over-broad blame: " + r.over_broad)
        if r.blamed_unrelated:
            return _Answer(False, "blames component(s) that are not faulty: " + ", ".join(sorted(r.blamed_unrelated)))
        return _Answer(True, "blames no unrelated component")

    def q_scope_all_faults(self) -> _Answer:
        r = self.r
        if r.over_broad:
            return _Answer(False, "naming everything does not identify the faulty components: " + r.over_broad)
        missing = sorted(r.truth_components - r.asserted)
        if missing:
            return _Answer(False, "does not assert faulty component(s): " + ", ".join(missing))
        # a problem of several faults: each fault's own mechanism, not only its component (naming postgres-rate as the
        # victim of another fault's load is not finding that its grants were revoked)
        unstated = [t.fault for t in self.truths if t.fault not in r.mechanism] if len(self.truths) > 1 else []
        if unstated and r.mechanism:
            return _Answer(False, "does not assert the mechanism of every fault: " + ", ".join(unstated))
        return _Answer(True, "asserts every faulty component: " + ", ".join(sorted(r.truth_components)))

    def q_scope_priority(self) -> _Answer:
        r = self.r
        if r.over_broad:
            return _Answer(False, "over-broad blame sets no priority")
        visible = {c.lower() for t in self.truths if t.user_visible for c in t.components}
        latent = {c.lower() for t in self.truths if not t.user_visible for c in t.components} - visible
        if not latent or not visible:
            return _Answer(True, "single class of fault: nothing to prioritise", 0.6)
        order = [m.component for m in r.mentions if m.component in visible | latent and not r.clauses[m.clause].exonerating]
        if not order:
            return _Answer(False, "names none of the faults")
        if order[0] in visible:
            return _Answer(True, f"presents the user-visible fault ({order[0]}) first")
        for cue in lexicon.LATENT_CUES:
            found = text.find_phrase(r.flat, cue)
            if found and visible & r.asserted:
                return _Answer(True, f"marks the latent fault as secondary: {found!r}", 0.7)
        return _Answer(False, f"leads with the latent fault ({order[0]}) over the user-visible one")


class _UpstreamQuestions(_SregymQuestions):
    """Upstream SREGym's checklist (D1-Q1 ... D3-Q3), answered from the same reading."""

    def q_D1_Q1(self) -> _Answer:  # same component as the origin
        return self.q_loc_component()

    def q_D1_Q2(self) -> _Answer:  # distinguishes the origin from cascading failures
        origin = self.q_loc_component()
        if not origin.answer:
            return origin
        if self.r.blamed_unrelated:
            return _Answer(False, "treats downstream components as origins too: " + ", ".join(sorted(self.r.blamed_unrelated)))
        return _Answer(True, "the origin is asserted and the victims are not blamed")

    def q_D1_Q3(self) -> _Answer:  # does not blame a healthy component as the origin
        return self.q_scope_no_unrelated()

    def q_D2_Q1(self) -> _Answer:  # the same injected mechanism
        return self.q_char_mechanism()

    def q_D2_Q2(self) -> _Answer:  # concrete mutated details
        return self.q_char_values()

    def q_D2_Q3(self) -> _Answer:  # no wrong or unrelated fault type
        if self.r.other_mechanisms:
            return _Answer(False, "also asserts other fault types: " + ", ".join(sorted(self.r.other_mechanisms)))
        if not self.r.mechanism:
            return _Answer(False, "asserts no fault type of the truth")
        return _Answer(True, "asserts no unrelated fault type")

    def q_D3_Q1(self) -> _Answer:  # no over-attribution
        return self.q_scope_no_unrelated()

    def q_D3_Q2(self) -> _Answer:  # no under-attribution
        return self.q_scope_all_faults()

    def q_D3_Q3(self) -> _Answer:  # impact consistent with the ground truth
        return self.q_char_chain()


_STOP = frozenset({"that", "this", "with", "from", "into", "than", "does", "have", "were", "which", "their", "there", "them"})

# keys whose values are the state before the fault: never evidence of knowing the mutation
_PRE_FAULT_KEYS = frozenset({"before", "baseline", "original", "previous", "old", "decoys"})
# mappings whose keys are themselves injected names (an env var added, a label required)
_NAMED_KEYS = frozenset({"env", "selector", "nodeselector", "labels", "annotations"})


# keys that name the changed object or who acts on it ("resource": "DatastoreCluster/orbit-db", "operator"), not a value
# it was given: naming the object states no value (red-team round 13, finding 5)
_NAMING_KEYS = frozenset({"resource", "operator"})


def _pre_fault_scalars(value: Any, inside: bool = False, key: str = "") -> list[tuple[str, Any]]:
    """(key, value) of every scalar recorded as the state before the fault (under ``before``, ``old`` ...)."""
    if isinstance(value, Mapping):
        return [pair for sub, item in value.items()
                for pair in _pre_fault_scalars(item, inside or str(sub).lower() in _PRE_FAULT_KEYS, str(sub))]
    if isinstance(value, list | tuple):
        return [pair for item in value for pair in _pre_fault_scalars(item, inside, key)]
    return [(key, value)] if inside and value is not None and not isinstance(value, bool) else []


def concrete_values(truth: GroundTruth) -> list[str]:
    """The distinctive *mutated* values a diagnosis could state: post-fault values only, never the
    truth's key names (``targetPort``, ``removed_env``) nor pre-fault values."""
    components = {c.lower() for c in truth.components}
    values: list[str] = []
    # the tags the images had before the fault: a tag the change kept ("sregym/fleetcast-operater:1.0" for
    # "sregym/fleetcast-operator:1.0", a typo in the repository) says nothing of the change by itself (round 25)
    kept_tags = {str(v).rsplit(":", 1)[1].lower() for k, v in _pre_fault_scalars(truth.mutated_values)
                 if re.fullmatch(r"[\w./-]+:[\w.-]+", str(v))}

    def add_scalar(value: Any) -> None:
        if isinstance(value, bool) or value is None:
            return
        string = str(value).strip()
        if string.lower() in lexicon.TRIVIAL_VALUES or string.lower() in components or len(string) < 2:
            return
        values.append(string)
        if re.fullmatch(r"[\w./-]+=[\w./-]+:\w+", string):  # a taint "key=value:Effect": its key=value names it too
            values.append(string.rsplit(":", 1)[0])
        if re.fullmatch(r"[\w./-]+:[\w.-]+", string):  # image reference or host:port: the tag/port alone counts too
            tag = string.rsplit(":", 1)[1]
            if len(tag) >= 2 and tag.lower() not in lexicon.TRIVIAL_VALUES and tag.lower() not in kept_tags:
                values.append(tag)

    def add(value: Any, key: str = "") -> None:
        if isinstance(value, Mapping):
            for sub, item in value.items():
                if str(sub).lower() in _PRE_FAULT_KEYS:
                    continue
                if key.lower() in _NAMED_KEYS:
                    add_scalar(sub)
                    if isinstance(item, str | int) and not isinstance(item, bool):  # a label is its key=value too
                        values.append(f"{sub}={item}")
                add(item, str(sub))
            return
        if isinstance(value, list | tuple):
            for item in value:
                add(item, key)
            return
        add_scalar(value)

    for key, value in truth.mutated_values.items():
        if key.lower() in _PRE_FAULT_KEYS or key.lower() in _NAMING_KEYS:
            continue
        if re.fullmatch(r"[A-Z][A-Z0-9]*_[A-Z0-9_]+", key):  # an environment variable's name is what was changed
            values.append(key)
        add(value, key)
    if truth.mutated_values.get("before") is not None:  # a flat {before, after} pair
        values = [v for v in values if v != str(truth.mutated_values.get("before"))]
    return list(dict.fromkeys(values))


def _answer(question: Any, found: _Answer) -> ChecklistAnswer:
    return ChecklistAnswer(
        id=question.id, dimension=question.dimension, question=question.question, answer=found.answer,
        evidence=found.evidence, confidence=found.confidence,
    )


def make_rules_judge(**config: Any) -> RulesJudge:
    """``OracleSpec`` factory: ``threshold``, ``rubric`` (and tuning knobs) from the configuration."""
    allowed = {"threshold", "over_broad_fraction", "over_broad_min", "rubric"}
    unknown = sorted(set(config) - allowed)
    if unknown:
        from sregym_core.errors import ConfigError

        raise ConfigError(f"judge-rules does not take {', '.join(unknown)}", hints=(f"known options: {', '.join(sorted(allowed))}",))
    return RulesJudge(**config)


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
            # after "namespace" a name looks like one (`staging`, kube-system, team2, default): a plain word there is
            # what the sentence says of the namespace ("the namespace requires ...", "the namespace now only allows")
            named = pattern is _NAMESPACE_BEFORE or not match.group(0).lstrip().startswith("namespace") \
                or "`" in match.group(0) or re.search(r"[-0-9]", candidate) or candidate == "default"
            if named and candidate not in _NOT_A_NAMESPACE and candidate not in namespaces:
                return candidate
    return None
