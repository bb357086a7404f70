"""Reading a mechanism by its meaning, not its exact words (issue #35, third round).

A plain-English diagnosis rarely repeats the fault's words: "the disk is physically damaged, a third of the
blocks unreadable, reads fail with I/O errors" states "bad blocks on the volume's disk: reads of them fail
with EIO" without the word "bad" or "EIO". The rules judge therefore also reads the truth's own mechanism
statement as *concepts*: each word reduced to its stem ("composing" and "compose", "matches" and "match",
"dropped" and "drops"), and stems of one family of ordinary SRE English read as one concept ("drop", "lose",
"throw away"; "expired", "no longer valid"; "junk", "garbage"). The families are general English, written
once for every fault, never per fault or per sentence; the fault's mechanism statement decides which concepts
a diagnosis must carry.

A diagnosis states the mechanism when its sentence carries most of the mechanism's concepts, weighted so that
words every fault shares ("pod", "node", "service", "container") count for less than the words that tell this
fault from its siblings (see :func:`coverage`).
"""

from __future__ import annotations

import functools
import re

# Families of words that say the same thing in an SRE's prose. Each line is one concept; the first word names
# it. Multi-word entries are read as one token after :func:`_join_phrases`.
_FAMILIES = (
    "drop lose loss lost discard throw_away swallow blackhole",
    "expire expiry invalid outdated lapse not_valid no_longer_valid validity_end past_its_validity",
    "evict push_out kick_out displace",
    "junk garbage bogus useless dummy filler",
    "large big huge oversized giant bulky",
    "flood stuff spam overwhelm",
    "bad damage corrupt defective unreadable faulty buggy broken",
    "forward route point send direct redirect",
    "bind listen occupy grab",
    "same identical very",
    "strict restrict strictest harden",
    "taint mark",
    "change update modify edit alter tweak",
    "remove delete",
    "reject refuse deny forbid disallow",
    "tiny small little minuscule undersized",
    "slow delay latency lag sluggish",
    "replica copy instance",
    "node machine host worker_node vm",
    "sidecar helper companion extra_container",
    "certificate cert",
    "exceed beyond above surpass",
    "more more_than surplus extra",
    "limit cap ceiling maximum max",
    "query lookup fetch",
    "eio io_error input_output_error i_o_error disk_error read_error",
    "job task batch",
    "never_exit never_finish never_complete never_stop never_end run_forever hang_forever stay_active",
    "skip skipped miss",
    "connection conn",
    "missing absent gone nonexistent not_exist does_not_exist no_such",
    "wrong incorrect mistaken bad_value",
    "password passwd credential",
    "permission privilege grant right access",
    "revoke take_away withdraw strip",
    "full exhaust fill_up out_of_space no_space",
    "crash exit die restart_loop crashloop",
    "lock exclusive_lock access_exclusive",
    "shared_memory shm dev_shm",
    "packet traffic",
    "cache memcached redis valkey",
    "database db postgres postgresql mysql mongo mongodb",
    "webhook admission_webhook",
    "policy rule",
    "schedule place",
    "require mandatory must",
    "flag toggle switch feature_flag feature_switch feature_toggle",
    "enable turn_on switch_on activate flip_on",
    "another other foreign unrelated different",
    "config configuration setting settings",
    "regular normal ordinary plain",
    "app application",
)

# words every fault statement shares: they count for little on their own
_COMMON = frozenset(
    "pod container service deployment node replica app application cluster kubernetes namespace config "
    "configuration setting value object resource every all some new request call traffic connection "
    "component workload process file user client server make cause causing which with their its into target change "
    "because when than that this there them from have been were will would also only".split()
)

_PHRASES = sorted({e for line in _FAMILIES for e in line.split() if "_" in e}, key=lambda e: -e.count("_"))
_PHRASE_RE = re.compile(
    r"(?<![a-z0-9])(" + "|".join(re.escape(p).replace("_", r"\s+") for p in _PHRASES) + r")(?:s|es|ed)?(?![a-z0-9])")


def stem(word: str) -> str:
    """A crude English stem: plural, past, progressive and comparative endings off, a doubled final consonant
    and a final "e" dropped ("composing" and "compose", "dropped" and "drop", "matches" and "match")."""
    w = word.lower().strip("'")
    if w.endswith("'s"):
        w = w[:-2]
    for suffix in ("ations", "ation", "ings", "ing", "edly", "ies", "ied", "ed", "es", "est", "er", "ly", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not (suffix == "s" and w.endswith("ss")):
            w = w[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    if len(w) >= 5 and w.endswith("e"):
        w = w[:-1]
    return w


@functools.lru_cache(maxsize=1)
def _family_of() -> dict[str, str]:
    owner: dict[str, str] = {}
    for line in _FAMILIES:
        entries = line.split()
        head = stem(entries[0])
        for entry in entries:
            owner.setdefault(entry if "_" in entry else stem(entry), head)
    return owner


def _join_phrases(flat: str) -> str:
    # the joined phrase keeps the length of what it replaces (an ending becomes "_"): offsets stay the flat text's
    return _PHRASE_RE.sub(lambda m: "_".join(m.group(1).split()).ljust(len(m.group(0)), "_"), flat)


def concepts(flat: str) -> list[tuple[str, int, int]]:
    """The concepts of a flattened text, each with the span of the words that carry it."""
    family = _family_of()
    out = []
    joined = _join_phrases(flat)
    # offsets in the joined text map back to the flat one word for word (only spaces became "_")
    for match in re.finditer(r"[a-z0-9_']+", joined):
        token = match.group(0).strip("'_")
        if not token:
            continue
        key = token if "_" in token else stem(token)
        out.append((family.get(key, key), match.start(), match.end()))
    return out


@functools.lru_cache(maxsize=2048)
def mechanism_concepts(mechanism: str) -> tuple[tuple[str, float], ...]:
    """The concepts of a fault's mechanism statement with their weights: 1 for a word that tells the fault
    apart, 0.4 for a word every fault shares; words of three letters or fewer (but "eio", "shm", "tls") and
    stop words carry nothing."""
    from .text import flatten

    seen: dict[str, float] = {}
    heads = set(_family_of().values())
    for concept, _a, _b in concepts(flatten(mechanism)):
        if concept in seen or (len(concept) < 3 or (len(concept) == 3 and concept not in heads | _SHORT_TERMS)) or concept in _STOP:
            continue
        seen[concept] = 0.4 if concept in _COMMON or concept in _COMMON_STEMS else 1.0
    return tuple(seen.items())


_SHORT_TERMS = frozenset({"eio", "shm", "tls", "dns", "oom", "cpu", "ip", "fd", "ttl", "cidr", "pvc", "rwo"})
_STOP = frozenset({"the", "and", "for", "its", "that", "this", "with", "from", "into", "than", "does", "have", "were",
                   "which", "their", "there", "them", "been", "when", "where", "what", "some", "also", "only"})
_COMMON_STEMS = frozenset(stem(w) for w in _COMMON)


def coverage(sentence_flat: str, mechanism: str) -> tuple[float, int, list[tuple[int, int]]]:
    """How much of the mechanism's meaning a sentence carries: (weighted share of its concepts present, how
    many distinctive concepts are present, the spans of the words that carry them)."""
    wanted = mechanism_concepts(mechanism)
    if not wanted:
        return 0.0, 0, []
    here: dict[str, tuple[int, int]] = {}
    for concept, a, b in concepts(sentence_flat):
        here.setdefault(concept, (a, b))
    tokens = [(m.group(0), m.start(), m.end()) for m in re.finditer(r"[a-z0-9]{10,}", sentence_flat)]
    for concept, _w in wanted:  # a concept inside a compound word: "anti" and "affinity" in "podantiaffinity"
        if concept not in here and len(concept) >= 4 and "_" not in concept:
            inside = next(((a, b) for token, a, b in tokens if concept in token and token != concept), None)
            if inside:
                here[concept] = inside
    more = re.search(r"\s>\s", sentence_flat)
    if more and "more" not in here:
        here["more"] = (more.start() + 1, more.end() - 1)
    total = sum(w for _c, w in wanted)
    got = [(c, w) for c, w in wanted if c in here]
    return (sum(w for _c, w in got) / total, sum(1 for _c, w in got if w == 1.0), [here[c] for c, _w in got])
