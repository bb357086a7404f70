"""What a sentence claims was changed on the faulty object, compared with what the truth changed (issue #35, seventh round).

A diagnosis that names the right object (the webhook, the CronJob, the TLS Secret, the custom resource) can still be
wrong about *what* on it is broken: another field, another value of the same field, or a defect of another family
("the certificate is for the wrong host name" when it expired). The judge already finds the right object; this module
reads the claim the sentence makes about it and says whether it contradicts the truth:

* :func:`other_value`: the sentence gives one of the truth's own fields a value ("``failurePolicy: Fail``",
  "``runAsUser`` set to 0") that is not the value the truth gave it, and never writes the truth's value;
* :func:`other_family`: the sentence's cause part states a defect of a family (expiry, host name, pull credentials,
  a suspended job, a widened or narrowed permission, a binding's subject, an untrusted CA, a backend scaled to zero, a
  limit too small, something flooding it, a missing image tag) that the truth never states, and no family the truth
  does state (a truth of no family is not read this way).

The families are written once, for every fault (never per fault or per labelled item): each is a kind of defect an
SRE names, with the words that say it. A truth is read by everything it names (its statement, changed fields and
values, keywords and vocabulary), so a family the truth mentions anywhere is never foreign to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

# kinds of defect, each with the words that state it (over flattened text: lower case, hyphens/underscores as spaces)
FAMILIES: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern)
    for name, pattern in {
        # a certificate or credential past its validity
        "expiry": r"\bexpir\w*|\bnot ?after\b|\bout of date\b|\bno longer valid\b|\bvalidity\b",
        # a certificate or route for another name
        "host-name": r"\bwrong (?:host ?names?|hosts?|domains?|dns names?)\b|\bhost ?names? (?:mismatch|do(?:es)? not match)"
                     r"|\bsans?\b|\bsubject alt\w* names?\b|\bcommon name\b|\bcn mismatch\b",
        # pulling an image needs credentials that are missing or wrong
        "pull-credentials": r"\bimage ?pull ?secrets?\b|\bpull ?secrets?\b|\bregistry (?:credentials?|auth\w*|login|password|token)s?\b"
                            r"|\bunauthori[sz]ed\b|\bdockerconfigjson\b",
        # a CronJob switched off, rather than its runs failing
        "suspended": r"\bsuspend(?:ed|s)?\b",
        # permissions given beyond what was there
        "permission-widened": r"\bwiden\w*|\bbroaden\w*|\bover ?privileg\w*|\btoo (?:many|broad|wide|much) (?:permissions?|rights|verbs|access)\b"
                              r"|\b(?:got|gained|granted|added) (?:the )?(?:delete|create|update|patch|write|extra|more|cluster admin)\b",
        # permissions taken away
        "permission-narrowed": r"\bread ?only\b|\brevok\w*|\b(?:may|can) ?not (?:get|list|delete|update|patch|read|watch|modify)\b"
                               r"|\b(?:lacks?|missing) (?:the |a |any )?(?:\w+ )?(?:verbs?|permissions?|rights?)\b|\bforbidden\b"
                               r"|\bno longer (?:allows?|permits?|may|can)\b|\bonly (?:read|get|list|watch) (?:verbs?|rights?|access)\b",
        # a binding that points at the wrong subject
        "binding-subject": r"\brole ?bindings? (?:\S+ ){0,6}?(?:subjects?|binds?|bound|points?|refers?)\b|\bbinds? (?:it |the role )?to the (?:wrong|default)\b"
                           r"|\bbound to the (?:wrong|default)\b",
        # a server certificate signed by a CA the client does not trust
        "ca-trust": r"\bca ?bundle\b|\bcertificate authority\b|\bunknown authority\b|\bsigned by (?:a |an |another |the wrong )|\bx509\b"
                    r"|\b(?:wrong|different|another|other) ca\b",
        # a backend with nothing to answer: scaled to zero, no endpoints
        "backend-down": r"\bno (?:ready )?endpoints?\b|\bscaled (?:down )?to (?:0|zero)\b|\b0 replicas\b|\bzero replicas\b",
        # a limit or size too small for what it holds, rather than something filling it
        "undersized": r"\btoo (?:small|low|tight|little|short)\b|\bundersized\b|\btiny\b|\bnot enough (?:memory|cpu|space|room)\b"
                      r"|\blowered\b|\breduced\b|\bshrunk\b|\bcapped\b|\bsized\b",
        # something filling a resource up
        "flood": r"\bflood\w*|\bfill(?:s|ed|ing)? (?:it |up )|\bload ?test\w*|\bwrit\w+ (?:\S+ )?(?:large|big|huge|junk)\b",
        # an image reference that cannot be pulled because the tag or version does not exist
        "image-tag": r"\b(?:image )?tags?\b|\bmanifest unknown\b|\bnever (?:built|pushed|published)\b|\bnot found in the registry\b",
    }.items()
}


def families(flat: str) -> set[str]:
    """The defect families a flattened text states."""
    return {name for name, pattern in FAMILIES.items() if pattern.search(flat)}


def other_family(cause_flat: str, truth_flat: str) -> bool:
    """Does a sentence's cause part state defects only of families the truth never states? ``truth_flat`` is
    everything the truth names, flattened; ``cause_flat`` the sentence up to what it says follows."""
    claimed = families(cause_flat)
    if not claimed:
        return False
    own = families(truth_flat)
    # a truth of no known family is not read this way: nothing says which family its defect is of
    return bool(own) and not claimed & own


# ------------------------------------------------------------------------------------------------
# the truth's own field given another value
# ------------------------------------------------------------------------------------------------

_BEFORE_KEYS = frozenset({"before", "baseline", "original", "previous", "old", "decoys"})
# a field worth comparing: a compound name (camelCase or snake_case), not a plain word such as "service" or "port"
_COMPOUND = re.compile(r"^[a-z]+(?:[A-Z][a-z0-9]*)+$|^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")


def field_values(values: Any) -> dict[str, set[str]]:
    """The truth's changed fields with their values after the fault: ``{"failurePolicy": {"Ignore"}}``, and for a
    ``{"field": "spec.updateStrategy", "after": "Rolling"}`` record the field's last part with ``after``."""
    found: dict[str, set[str]] = {}

    def record(key: str, value: Any) -> None:
        if value is None or isinstance(value, Mapping | list | tuple) or str(value).strip() == "":
            return
        if _COMPOUND.match(key):
            found.setdefault(key, set()).add(str(value))

    def visit(value: Any, key: str) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                k = str(k)
                if k in _BEFORE_KEYS:
                    continue
                visit(v, key if k == "after" else k)
        else:
            record(key, value)

    if isinstance(values, Mapping):
        field = str(values.get("field") or "")
        if field and "after" in values:
            record(field.rsplit(".", 1)[-1], values["after"])
        visit(values, "")
    return found


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# the value a sentence gives a field: "failurePolicy: Fail", "runAsUser=0", "runAsUser set to 0", "fsGroup was changed
# to 0", "updateStrategy changed from RollingUpdate to Rolling", "failurePolicy is `Fail`"; never "set X back to" (a fix).
# After a bare "is" only a number or a quoted value counts: "the configMap is never removed" gives no value.
_GIVEN = (r"(?:(?:\s+(?:is|was|were|got|has\s+been|had\s+been))?\s+(?:set|changed|lowered|raised|reduced|increased|moved|flipped)"
          r"\s+(?:from\s+\S+\s+)?to\s+[`'\"]?(?P<set>-?[\w.]+)|\s*[:=]\s*[`'\"]?(?P<key>-?[\w.]+)"
          r"|\s+(?:is|are|was|were|now)\s+(?:now\s+)?(?:(?P<number>-?\d[\w.]*)|[`'\"](?P<quoted>-?[\w.]+)))")
# a word that says what is wrong with a value rather than being one
_NOT_A_VALUE = frozenset({"the", "a", "an", "its", "their", "not", "too", "wrong", "invalid", "negative", "missing", "empty",
                          "unset", "bad", "broken", "different", "another", "something", "now", "still", "also", "set",
                          "changed", "correct", "right", "fine", "ok", "okay", "unchanged", "same", "default", "nothing"})
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_VALUE_SHAPE = re.compile(r"\d|^[A-Z]|^(?:true|false|on|off)$")


def _same(claimed: str, truth: str) -> bool:
    a, b = claimed.strip("`'\".,;").lower(), truth.strip("`'\".,;").lower()
    if a == b:
        return True
    numbers_a, numbers_b = _NUMBER.findall(a), _NUMBER.findall(b)
    return bool(numbers_a) and numbers_a == numbers_b


def _claims(raw: str, key: str) -> Iterator[str]:
    names = {re.escape(key), re.escape(_camel(key))}
    # the key as a field (case as written: "ConfigMap" is a kind, "configMap" the field), in a dotted path or alone
    pattern = re.compile(rf"(?<![\w.])(?:\w+\.)*(?:{'|'.join(names)})`?{_GIVEN}")
    # the verb before the field: "sets runAsUser to 0", "changed the updateStrategy to Rolling" (round 13, finding 5)
    verb_first = re.compile(rf"(?i:\b(?:sets?|setting|changed?|changing|puts?|lowered|raised))\s+(?:(?i:the|its)\s+)?"
                            rf"(?:\w+\.)*(?:{'|'.join(names)})`?\s+to\s+[`'\"]?(?P<set>-?[\w.]+)")
    for found in (*pattern.finditer(raw), *verb_first.finditer(raw)):
        value = next(v for v in found.groupdict().values() if v is not None).rstrip(".,;")
        # a capitalised word after "key:" is an enumeration's value ("dnsPolicy: Default", "failurePolicy: Fail"), not
        # the plain word "default"
        enum = found.groupdict().get("key") is not None and value[:1].isupper() and value[1:2].islower()
        if (value.lower() in _NOT_A_VALUE and not enum) or not _VALUE_SHAPE.search(value):
            continue
        yield value


def other_value(raw: str, values: Any) -> bool:
    """Does the sentence give one of the truth's changed fields a value the truth did not give it, and nowhere write
    the truth's value? ("``failurePolicy: Fail``" for a truth whose webhooks have ``failurePolicy: Ignore``)."""
    for key, truth_values in field_values(values).items():
        claimed = list(_claims(raw, key))
        if not claimed:
            continue
        if any(_same(c, t) for c in claimed for t in truth_values):
            continue
        written = any(re.search(rf"(?<![\w.-]){re.escape(t)}(?![\w-])", raw, re.I) for t in truth_values)
        if not written:
            return True
    return False
