"""Second causes the rest of the reader cannot see (red-team rounds 17 and 18, finding D/5): a claim written in another
language, which the rules cannot read and so cannot weigh against the fault's, and the writer's own diff of what
changed, which the reader would otherwise set aside as pasted tool output.

Both are read structurally: a sentence is in another language when its function words are another language's (a few
short words every sentence of that language uses, none of them English words), whatever it says; a ``diff`` block's
``-``/``+`` lines of one key are a change the writer states.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sregym_core.types import GroundTruth

#: function words of the languages the blind sets' non-native writers and the red team used besides English: none is an
#: English word (no "die", "also", "plus", "no", "is", "de" of names...)
_FOREIGN = frozenset("""
der das und wurde wird ist nicht auf mit für daher außerdem auch eine einen einem dem den des sind oder aber weil dass
zum zur nach wegen deshalb deswegen ebenfalls wurden
les est une et pour dans pas été donc aussi qui que sur avec du au aux ont sont mais parce cette ces
los las una por para con fue está pero porque también del muy fueron
il che è della per non sono stato anche quindi perché
uma foi não então também
het een niet werd ook daarom omdat
""".split())
#: English function words: a sentence with more of them than of another language's is English with a foreign word or two
_ENGLISH = frozenset("""
the a an is was were are be been and or of to in on at for with by from that this it its as not so because but which
""".split())
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?", re.U)


def foreign(sentence: str) -> bool:
    """Is ``sentence`` written in another language than English (three or more of another language's function words,
    more than its English ones)?"""
    words = [w.lower() for w in _WORD.findall(sentence)]
    other = sum(w in _FOREIGN for w in words)
    return other >= 3 and other > sum(w in _ENGLISH for w in words)


def foreign_claims(sentences: Iterable[str]) -> list[str]:
    """The sentences in another language that name something (a value with a digit, or a name with a hyphen, a dot or
    a digit): claims the judge cannot read."""
    return [s for s in sentences if foreign(s) and re.search(r"\d|\b\w+[-.]\w+", s)]


_FENCE = re.compile(r"^\s*```\s*diff\s*\n(.*?)^\s*```", re.S | re.M | re.I)
_CHANGED = re.compile(r"^([-+])\s*(?:- )?([\w.\-/\"']+)\s*:\s*(\S.*?)\s*$")
#: keys a diff of a live object shows that record its history, not its configuration (a ``kubectl diff`` pasted as is)
_BOOKKEEPING = re.compile(r"generation|resourceversion|revision|timestamp|time$|uid$|restartedat|manager|operation|"
                          r"last-applied|^kubectl\.kubernetes\.io|^deployment\.kubernetes\.io", re.I)


def diff_changes(submission: str) -> list[tuple[str, str, str]]:
    """The changes a ``diff`` block states: (key, old value, new value) for a key with a ``-`` line and a ``+`` line of
    different values. Headers (``---``, ``+++``, ``@@``) and bookkeeping keys are not changes."""
    out: list[tuple[str, str, str]] = []
    for block in _FENCE.findall(submission):
        old: dict[str, str] = {}
        new: dict[str, str] = {}
        for line in block.splitlines():
            if line.startswith(("---", "+++", "@@")):
                continue
            found = _CHANGED.match(line)
            if found and not _BOOKKEEPING.search(found.group(2)):
                (old if found.group(1) == "-" else new).setdefault(found.group(2).strip("\"'"), found.group(3).strip("\"'"))
        out += [(key, old[key], new[key]) for key in old if key in new and old[key] != new[key]]
    return out


def _scalars(value: Any) -> Iterable[str]:
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _scalars(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _scalars(item)
    elif value is not None:
        yield str(value)


def changes_beyond(submission: str, truths: Sequence[GroundTruth]) -> list[str]:
    """The keys the writer's diff changes that no fault changed: neither a key of a truth's ``mutated_values`` (its last
    part) nor a change to or from one of their values. Each is a second cause the writer states (red-team round 18,
    finding 5: the fault's image change and, in the same diff, the memory limit)."""
    changes = diff_changes(submission)
    if not changes:
        return []
    keys = {str(k).lower().rsplit(".", 1)[-1] for t in truths for k in t.mutated_values}
    values = {v.lower() for t in truths for v in _scalars(t.mutated_values)}
    return sorted({key for key, old, new in changes
                   if key.lower().rsplit(".", 1)[-1] not in keys and not {old.lower(), new.lower()} & values})
