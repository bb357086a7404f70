"""Text matching helpers for the rule-based judge: normalisation, component mentions, clauses.

Diagnoses are free text written by agents, so matching is deliberately forgiving about case,
hyphens, contractions and pod-name suffixes, and deliberately strict about *where* a name appears:
a component named as a downstream symptom is not blamed, a component in "X is healthy" is not named.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

import attrs

_CONTRACTIONS = {
    "doesn't": "does not",
    "don't": "do not",
    "didn't": "did not",
    "isn't": "is not",
    "aren't": "are not",
    "wasn't": "was not",
    "weren't": "were not",
    "can't": "cannot",
    "couldn't": "could not",
    "won't": "will not",
    "hasn't": "has not",
    "haven't": "have not",
}

# Component names that are also ordinary English words in an SRE's prose ("error rate", "the user",
# "search requests"). They only count as a component mention next to a resource noun or in quotes.
COMMON_WORDS = frozenset(
    {
        "user", "users", "rate", "search", "profile", "reservation", "recommendation", "order", "orders",
        "cart", "payment", "email", "checkout", "login", "review", "text", "media", "home", "storage",
        "cache", "queue", "config", "auth", "api", "web", "gateway", "ad", "shipping", "currency", "catalog",
        "product", "post", "compose", "timeline", "social", "graph", "url", "backend", "worker",
        "database", "db", "proxy", "server", "client", "data",
    }
)

RESOURCE_NOUNS = (
    "service", "services", "svc", "deployment", "deployments", "deploy", "pod", "pods", "container",
    "containers", "statefulset", "microservice", "server", "replica", "replicas", "component", "backend",
    "workload", "app", "image", "daemonset", "process", "instance", "database", "db", "cache",
)

_DATASTORE_PREFIXES = ("postgres", "postgresql", "mongodb", "mongo", "mysql", "db", "redis", "memcached", "valkey")
_DATASTORE_SUFFIXES = ("db", "database", "postgres", "postgresql", "mongodb", "mongo", "mysql", "redis", "memcached", "cache")
_CACHE_WORDS = ("memcached", "redis", "valkey", "cache")


def _is_cache(name: str) -> bool:
    """Is a component, by a part of its name, a cache (``memcached-profile``, ``home-timeline-redis``)?"""
    return any(w in name.split("-") for w in _CACHE_WORDS)

_NEGATION = re.compile(
    r"\b(?:not|no|never|without|rather than|instead of|ruled out|rule out|nothing to do with|unrelated to)\b"
    r"(?:\s+\S+){0,3}\s*$"
)

# Clauses saying a component is fine: the component is mentioned but not blamed or identified.
_EXONERATION = re.compile(
    r"\b(?:is|are|was|were|looks|look|seems|seem|appears|appear)\s+(?:\w+\s+)?"
    r"(?:healthy|fine|ok|okay|unaffected|working|normal|not the cause|not affected|not involved)\b"
    r"|\b(?:not the (?:root )?cause|(?<!not )(?<!n't )(?<!yet )(?<!never )(?<!not be )(?<!cannot be )(?<!not been )ruled out|"
    r"not responsible|innocent|unrelated to the (?:fault|issue|problem))\b"
    r"|\b(?:unaffected|unchanged|healthy|clean)\b[\s.)]*$"
)

# Words that put a clause on the effect side: the components in it are victims, not culprits.
_SYMPTOM_CLAUSE = re.compile(r"\b(?:symptoms?|downstream|as a consequence|as a result|knock-on|cascad\w*|propagat\w*)\b")

_CAUSE_BEFORE_CONNECTIVE = re.compile(
    r"\b(?:because(?: of)?|due to|caused by|as a result of|stems? from|originat\w+ (?:from|in)|"
    r"root cause (?:is|was|:)|the cause (?:is|was)|culprit (?:is|was)|triggered by|since)\b"
)
_CAUSE_AFTER_CONNECTIVE = re.compile(
    r"\b(?:causes|caused|causing|leads? to|led to|leading to|results? in|resulting in|breaks|broke|therefore|"
    r"which makes|making|so that|hence|(?:which|this|that|it) is why|that's why|so (?:the|that|its|every|all|search|users?))\b"
    r"|,\s*so\b"  # after any word or markup ("...cluster.local**, so geo cannot reach")
)
BLAME_CUES = _BLAME_CUES = re.compile(
    r"(?:misconfigur\w*|\bwrong\b|\bbad\b|\bincorrect\b|\binvalid\b|\bbroken\b|\bfaulty\b|\brevoked?\b|"
    r"\bdeleted\b|\bremoved\b|\bmissing\b|\bmismatch\w*|\bchanged\b|\bmodified\b|\btypo\b|\bnonexistent\b|"
    r"does not exist|\bscaled\b|\bset to\b|\broot cause\b|\bculprit\b|\bbug\w*\b|\bdefect\w*\b|\bis the cause\b)"
)

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+|(?<=:)\s+(?=[A-Z0-9])|\s+-\s+|\s+(?=\d+\)\s)")
_CONTRAST_SPLIT = re.compile(r",?\s+\b(?:but|while|whereas|although|however)\b\s+")


# Chat abbreviations on-call engineers write ("svc", "cm", "pw rotated", "SA"), as the words they stand for.
_ABBREVIATIONS = {
    "svc": "service", "svcs": "services", "cm": "configmap", "cms": "configmaps", "pw": "password", "pwd": "password",
    "passwd": "password", "ing": "ingress", "privs": "privileges", "priv": "privilege", "perms": "permissions",
    "conns": "connections", "conn": "connection", "dup": "duplicate", "dupe": "duplicate", "ns": "namespace",
    "w/": "with", "w/o": "without", "b/c": "because", "cfg": "config", "netpol": "networkpolicy",
    "np": "networkpolicy", "sts": "statefulset", "ds": "daemonset", "rs": "replicaset", "deploy": "deployment",
    "creds": "credentials", "cert": "certificate", "certs": "certificates", "envvar": "environment variable",
    "img": "image",
}
_ABBREVIATION = re.compile(r"(?<![\w/.:-])(" + "|".join(re.escape(a) for a in sorted(_ABBREVIATIONS, key=len, reverse=True))
                           + r")(?![\w:-]|/(?![a-z])|\.\w)")  # "svc/geo" is the Service geo
# "A -> B": the writer's "so" (only between words: "off -> 100%" is a before/after value)
_ARROW = re.compile(r"(?<=[a-z)'\"`])\s*(?:->|=>|\u2192)\s*(?=[a-z(])")


@functools.lru_cache(maxsize=16384)
def normalize(text: str) -> str:
    """Lowercase, straight quotes, expanded contractions and chat abbreviations, arrows as "so",
    single spaces."""
    text = re.sub(r"\bSAs?\b", "serviceaccount", text)  # upper-case only: "sa" is a word in other languages
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("`", " ` ").lower()
    for short, long in _CONTRACTIONS.items():
        text = text.replace(short, long)
    text = _ABBREVIATION.sub(lambda m: _ABBREVIATIONS[m.group(1)], text)
    text = _ARROW.sub(", so ", text)
    return re.sub(r"[ \t]+", " ", text)


@functools.lru_cache(maxsize=16384)
def flatten(text: str) -> str:
    """``normalize`` plus hyphens, underscores and slashes as spaces (for phrase matching)."""
    return re.sub(r"\s+", " ", re.sub(r"[-_/]", " ", normalize(text))).strip()


@functools.lru_cache(maxsize=4096)
def phrase_pattern(phrase: str) -> re.Pattern[str] | None:
    """A word-bounded regex for ``phrase`` over :func:`flatten`-ed text."""
    words = flatten(phrase)
    if not words:
        return None
    body = r"\s+".join(re.escape(w) for w in words.split(" "))
    return re.compile(rf"(?<![a-z0-9]){body}(?![a-z0-9])")


def find_phrase(flat_text: str, phrase: str, *, allow_negated: bool = False) -> str | None:
    """The first non-negated occurrence of ``phrase`` in ``flat_text`` (with a little context)."""
    pattern = phrase_pattern(phrase)
    if pattern is None:
        return None
    for match in pattern.finditer(flat_text):
        before = flat_text[max(0, match.start() - 40) : match.start()]
        if not allow_negated and _NEGATION.search(before):
            continue
        return snippet(flat_text, match.start(), match.end())
    return None


def snippet(text: str, start: int, end: int, width: int = 40) -> str:
    left = max(0, start - width)
    right = min(len(text), end + width)
    return ("..." if left else "") + text[left:right].strip() + ("..." if right < len(text) else "")


@attrs.frozen
class Clause:
    """A piece of a sentence and its role in a causal statement.

    ``role`` is ``cause`` (what the diagnosis blames), ``effect`` (victims and symptoms),
    ``neutral`` (a plain statement) or ``exonerated`` ("X is healthy").
    """

    text: str
    role: str
    group: int = 0  # clauses split from one causal statement share a group

    @property
    def cause_side(self) -> bool:
        return self.role == "cause"

    @property
    def exonerating(self) -> bool:
        return self.role == "exonerated"

    @property
    def identifies(self) -> bool:
        """Does naming a component here identify it as (part of) the problem?"""
        return self.role in ("cause", "neutral")


def clauses(text: str) -> list[Clause]:
    """Split a diagnosis into clauses and classify which side of a causal statement each is on."""
    result: list[Clause] = []
    group = 0
    for sentence in _SENTENCE_SPLIT.split(normalize(text)):
        sentence = sentence.strip()
        if not sentence:
            continue
        for part in _CONTRAST_SPLIT.split(sentence):
            group += 1
            result.extend(attrs.evolve(c, group=group) for c in _split_causal(part.strip()))
    return [c for c in result if c.text.strip(" ,;:-()")]


# "looks fine at first glance; however ...": a concession, the thing is not cleared
CONCESSION = re.compile(r"\b(?:at first(?: glance| sight)?|on the surface|seemingly|superficially)\b")


# "..., even though it was running fine": a concession says what still worked; it clears nothing else in the part
_CONCEDED = re.compile(r"\b(?:even though|even if|although|though|despite)\b.*$")


def _split_causal(part: str) -> list[Clause]:
    if _EXONERATION.search(_CONCEDED.sub("", part)) and not CONCESSION.search(part):
        return [Clause(part, "exonerated")]
    if _SYMPTOM_CLAUSE.search(part) and not _CAUSE_BEFORE_CONNECTIVE.search(part):
        return [Clause(part, "effect")]
    match = _CAUSE_BEFORE_CONNECTIVE.search(part)
    if match:  # "<effect> because <cause>"
        return [Clause(part[: match.start()], "effect"), *_split_causal_after(part[match.end() :], "cause")]
    return _split_causal_after(part, "cause" if _BLAME_CUES.search(part) else "neutral")


def _split_causal_after(part: str, role: str) -> list[Clause]:
    match = _CAUSE_AFTER_CONNECTIVE.search(part)
    if match:  # "<cause> leads to <effect>"
        return [Clause(part[: match.start()], "cause"), Clause(part[match.end() :], "effect")]
    return [Clause(part, role)]


# Short forms of the words of component names ("pg-geo", "fe", "user-svc").
_NAME_PART_SHORT = {"postgres": "pg", "postgresql": "pg", "frontend": "fe", "service": "svc", "mongodb": "mongo"}


def _name_variants(name: str) -> list[str]:
    base = name.lower()
    variants = {base, base.replace("-", " "), base.replace("-", "_"), base.replace("-", "")}
    parts = base.split("-")
    short = "-".join(_NAME_PART_SHORT.get(p, p) for p in parts)
    if short != base:
        variants.add(short)
    if len(parts) >= 3 and parts[0] != "ts":  # "home-timeline-redis" -> "ht-redis", "home-timeline-service" -> "ht-svc"
        variants.add("".join(p[0] for p in parts[:-1]) + "-" + parts[-1])
        variants.add("".join(p[0] for p in parts[:-1]) + "-" + _NAME_PART_SHORT.get(parts[-1], parts[-1]))
    if parts[0] == "ts" and len(parts) >= 3:  # TrainTicket's "ts-auth-service": "auth-service", "ts-auth"
        variants.add("-".join(parts[1:]))
        if len(parts) == 3 and parts[-1] == "service":  # "preserve's deployment": needs context (see _strong)
            variants.add(parts[1])
    if parts[-1] == "service" and len(parts) >= 3:  # "compose-post-service": "compose-post"
        variants.add("-".join(parts[:-1]))
    # a name part that is an English compound written as one word is also written in two ("frontend": "front end",
    # "front-end"; "media-frontend": "media front end")
    for compound, words in _SPLIT_COMPOUNDS.items():
        if compound in parts:
            variants.add("-".join(words if p == compound else p for p in parts))
    for variant in list(variants):
        if "-" in variant:
            variants.add(variant.replace("-", " "))
    return sorted(variants, key=len, reverse=True)


_SPLIT_COMPOUNDS = {"frontend": "front-end", "backend": "back-end", "dataplane": "data-plane", "loadgen": "load-gen"}


def datastore_owner(name: str) -> str:
    """The service a datastore component belongs to (``postgres-geo`` -> ``geo``), else ``name``."""
    parts = name.lower().split("-")
    if len(parts) >= 2 and parts[0] in _DATASTORE_PREFIXES:
        return "-".join(parts[1:])
    if len(parts) >= 2 and parts[-1] in _DATASTORE_SUFFIXES:
        return "-".join(parts[:-1])
    return name.lower()


def _datastore_aliases(name: str) -> list[str]:
    """Prose aliases for datastore components: ``postgres-geo`` is also "the geo database"."""
    parts = name.lower().split("-")
    if len(parts) < 2:
        return []
    if parts[0] in _DATASTORE_PREFIXES:
        kind, owner = parts[0], "-".join(parts[1:])
    elif parts[-1] in _DATASTORE_SUFFIXES:
        kind, owner = parts[-1], "-".join(parts[:-1])
    else:
        return []
    nouns = ["cache", "memcached", kind] if kind in _CACHE_WORDS else ["database", "db", "postgres", "postgresql", kind]
    aliases = []
    # the owner as the writer spells it: in words, with its hyphens ("the url-shorten database"), or as its service
    # ("the database of url-shorten-service", not "url-shorten-service's database credentials"; ninth round of #35)
    for owner_words in dict.fromkeys([owner.replace("-", " "), owner]):
        for noun in dict.fromkeys(nouns):
            aliases += [f"{owner_words} {noun}", f"{owner_words}'s {noun}", f"{noun} of {owner_words}",
                        f"{noun} for {owner_words}"]
    if "-" in owner:
        aliases += [f"{noun} of {owner}-service" for noun in dict.fromkeys(nouns)]
    return aliases


# a datastore named as what a Secret belongs to ("the Secret of the database for geo") is not named as a component
_NOT_A_SECRETS_OWNER = r"(?<!secret of )(?<!secret of the )(?<!secret for )(?<!secret for the )"


@functools.lru_cache(maxsize=4096)
def component_pattern(name: str) -> re.Pattern[str]:
    """Word-bounded mentions of ``name``, allowing pod-name suffixes (``geo-7d9f8c-x2k4q``, ``db-0``)."""
    # a datastore's alias that only qualifies a Secret or ConfigMap ("profile's database Secret", "the Secret of the
    # database for url-shorten-service") names that object, which belongs to the service, not the datastore
    stores = [rf"{_NOT_A_SECRETS_OWNER}{re.escape(v)}(?!\s+(?:secret|configmap|config map|credentials? secret)s?\b)"
              for v in _datastore_aliases(name)]
    names = "|".join([re.escape(v) for v in _name_variants(name)] + stores)
    suffix = (
        # (a pod's random suffix alone has a digit or no vowel, as Kubernetes writes them: "-redis" in
        # "home-timeline-redis" is a word, no pod suffix of "home-timeline")
        r"(?:-[a-z0-9]{6,10}-[a-z0-9]{5}|-(?:(?=[a-z]*\d)[a-z0-9]{5}|[bcdfghjklmnpqrstvwxz]{5})|-\d+"
        r"|-(?:service|svc|deployment|deploy|pod|pods|server|config|configmap|cm|secret|data|tls|cert|certs))?"
    )
    # "geo:8083" and "http://geo" are addresses of a peer, not mentions of it as a component; its
    # cluster name ("cart.astronomy-shop.svc.cluster.local") names the Service itself
    return re.compile(rf"(?<![\w.-])(?<!//)(?:{names}){suffix}(?![\w-]|:\d|\.(?!svc\b|[a-z0-9-]+\.svc\b)[a-z])")


@functools.lru_cache(maxsize=4096)
def _component_literals(name: str) -> re.Pattern[str]:
    """The literal texts one of which every match of :func:`component_pattern` contains (its alternatives)."""
    return _any_of(tuple(_name_variants(name)) + tuple(_datastore_aliases(name)))


def _any_of(literals: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(literal) for literal in sorted(set(literals), key=len)))


def _unique_parts(name: str, others: frozenset[str]) -> list[str]:
    """The parts of ``name`` (lower case) that say which component it is: no other name has them, or begins with them
    ("travel" of ts-travel-service is in "travel2"), and they are no generic word."""
    other_parts = {p for o in others if o != name for p in o.split("-")}
    return [p for p in name.split("-") if len(p) >= 4 and p not in _GENERIC_PARTS
            and not any(o.startswith(p) for o in other_parts)]


@functools.lru_cache(maxsize=4096)
def _description_literals(name: str, others: frozenset[str]) -> re.Pattern[str] | None:
    """Texts one of which every match of :func:`description_pattern` contains (a superset: a clause without
    any of them is not scanned): a unique part's stem or a synonym's first word, and for a datastore its owner's
    first word and the words an only database is called by."""
    name = name.lower()
    unique = _unique_parts(name, others)
    literals = [p if re.search(r"\d", p) else (p[:-1] if p.endswith("e") else p) for p in unique]
    literals += [re.split(r"[\s-]+", s)[0] for p in unique for s in _PART_SYNONYMS.get(p, ())]
    owner = datastore_owner(name)
    if owner != name:
        literals += [owner.split("-")[0], "database", "datastore", "data store"]
    return _any_of(tuple(literals)) if literals else None


def _short_word(matched: str, name: str) -> bool:
    """Is this a one-word short form of a longer name ("preserve" for ts-preserve-service)? Such a word is
    plain English too: it names the component only with a resource noun, a possessive or quotes, even
    where plain-word mentions are otherwise accepted."""
    return matched.isalpha() and len(matched) >= 4 and len(matched) < len(name) - 3


def _strong(text: str, start: int, end: int, name: str) -> bool:
    """Is this mention unambiguous? Plain English words need a resource noun, quotes, a possessive,
    a colon, or the start of a clause next to them ("search is configured with...")."""
    matched = text[start:end]
    short_word = _short_word(matched, name)
    if name.lower() not in COMMON_WORDS and not short_word:
        return True
    if matched != name.lower() and not short_word:  # a suffixed or aliased form (geo-7d9f8-abcde, user database)
        return True
    before = text[max(0, start - 25) : start]
    after = text[end : end + 25]
    if _COMPOUND_AFTER.match(after) or _COMPOUND_BEFORE.search(before):  # "rate limit", "error rate": plain English
        return False
    if re.search(r"[`'\"]\s*$", before) and re.match(r"\s*[`'\"]", after):
        return True
    if re.search(r"(?:\*\*|__)$", before) and re.match(r"(?:\*\*|__)", after):  # set in bold, like quotes (eighth round)
        return True
    # a name given in brackets right after what describes it: "the booking service (preserve)" (twelfth round)
    if re.search(rf"\b(?:{'|'.join(RESOURCE_NOUNS)}|component|app|program)\s*\($", before) and re.match(r"\s*\)", after):
        return True
    if re.match(r"(?:'s\b|\s*[:(])", after) or not before.strip(" ,;-(") or re.search(r"/$", before):
        return True
    # what "the root cause is" leaves of its clause: "in ad." names ad (eighth round)
    if re.fullmatch(r"\s*(?:in|with)\s+(?:the\s+)?", before) and start <= 8 and re.match(r"\s*(?:[.;:,]|$)", after):
        return True
    if re.search(r"\b(?:root cause|culprit|cause) (?:is|was|lies)\s+(?:in\s+|with\s+)?(?:the\s+)?$", before):
        return True
    nouns = "|".join(RESOURCE_NOUNS)
    return bool(re.match(rf"\s*(?:{nouns})\b", after)
                or re.search(rf"\b(?:{nouns})\s*(?:named\s+|called\s+|of\s+|for\s+)?$", before))


_COMPOUND_AFTER = re.compile(r"[ _-]+(?:limit|limits|limiting|limiter|limited)\b")
_COMPOUND_BEFORE = re.compile(
    r"\b(?:error|hit|miss|success|failure|retry|request|drop|loss|eviction|arrival|sample|sampling|bit|data|refresh)[ _-]+$"
)


@attrs.frozen
class Mention:
    component: str
    clause: int
    start: int
    end: int


# the parts of a name that say nothing about which component it is
_GENERIC_PARTS = frozenset({"service", "svc", "server", "api", "app", "ts", "the", "main", "core", *_DATASTORE_PREFIXES,
                            *_DATASTORE_SUFFIXES,
                            # words of English that qualify anything ("other services" is no ts-order-other-service)
                            "other", "others", "first", "second", "extra", "legacy", "new", "old"})
_DESCRIBED_AS = (r"(?:service|server|backend|microservice|api|pods?|deployment|workload|app|container|program|process|"
                 r"component|converter|checker|handler|module)s?")
# what a part of a name is called in plain words ("the login service" for ts-auth-service, "the website" for a
# frontend; not "controller" for an operator: "the ingress-nginx controller" is no component of the app): a synonym stands for its part only where the
# part itself would (it is in no other component's name)
_PART_SYNONYMS = {
    "auth": ("login", "log-in", "sign-in", "signin", "authentication"),
    "frontend": ("website", "web site", "web front end", "web frontend", "front door"),
    "shorten": ("short-link", "short link", "link-shortening", "link shortener", "shortener"),
}


@functools.lru_cache(maxsize=4096)
def description_pattern(name: str, others: frozenset[str]) -> re.Pattern[str] | None:
    """A component described rather than named, where the description identifies one component of the app:
    a word of its name that no other component's name has, in any form, before "service", "server", "pods"...
    ("the image service" for image-provider, "the catalogue service" for product-catalog, "the post-composing
    service" for compose-post-service), and a datastore by its owner ("reservation's main table", "the
    database behind profiles" for postgres-profile)."""
    name = name.lower()
    unique = _unique_parts(name, others)
    forms = []
    if unique:
        # the part in any form ("catalog" and "catalogue", "compose" and "composing"); a part with digits exactly
        stems = "|".join(re.escape(p) if re.search(r"\d", p) else re.escape(p[:-1] if p.endswith("e") else p) + r"[a-z]*"
                         for p in unique)
        synonyms = [r"[\s-]+".join(re.escape(w) for w in re.split(r"[\s-]+", s)) for p in unique
                    for s in _PART_SYNONYMS.get(p, ())]
        forms.append(rf"(?<!\w)(?:{'|'.join([stems, *synonyms])})[ -]{_DESCRIBED_AS}(?![\w-])")
        # one word may stand between where what follows says it is a service ("the security check service", "the
        # currency conversion program"; "the nginx controller pod" is no nginx-thrift)
        forms.append(rf"(?<!\w)(?:{'|'.join([stems, *synonyms])})[ -](?!controller|ingress|proxy|config)[a-z]+[ -]"
                     rf"(?:service|server|program|microservice|converter|checker|handler)s?(?![\w-])")
    owner = datastore_owner(name)
    cache = _is_cache(name)
    # another datastore of the same owner and the same sort (two caches, two databases) makes it ambiguous
    twins = [o for o in others if o != name and datastore_owner(o) == owner and o != owner
             and _is_cache(o) == cache]
    stores = (r"(?:cache|memcached|redis|valkey)" if cache
              else r"(?:tables?|database|db|postgres(?:ql)?|mysql|mongo(?:db)?|datastore|data store)")
    if owner != name and not twins and re.fullmatch(r"[a-z]+", owner):
        forms.append(rf"(?<![\w-]){owner}(?:'s|s')\s+(?:[a-z]+\s+)?{stores}(?![\w-])(?!\s+(?:secret|configmap|config map)s?\b)")
        forms.append(rf"(?<![\w-]){_NOT_A_SECRETS_OWNER}{stores}\s+"
                     rf"(?:behind|backing|of|for|serving)\s+(?:the\s+)?{owner}s?(?:\s+service)?(?![\w-])")
    if owner != name and not twins and re.fullmatch(r"[a-z]+(?:-[a-z]+)+", owner):
        # a store of a multi-word owner described by what it keeps: "the cache that holds users' home timelines",
        # "the database behind the social graph"
        words = r"[\s-]+".join(owner.split("-"))
        forms.append(rf"(?<![\w-]){stores}\s+(?:that|which)\s+(?:holds?|stores?|keeps?|caches?|serves?|backs?)\s+"
                     rf"(?:[\w']+\s+){{0,2}}{words}s?(?![\w-])")
        forms.append(rf"(?<![\w-]){stores}\s+(?:behind|backing|of|for|serving)\s+(?:the\s+)?{words}s?(?:\s+service)?(?![\w-])")
    if owner != name and not cache and not any(datastore_owner(o) != o and not _is_cache(o)
                                               for o in others if o != name):
        # the app's only database, called so ("the FleetCast datastore", "our database"; not "the datastore manager")
        # (what something else is for or acts on, "the manager program for our database", names that other thing)
        forms.append(r"(?<![\w-])(?<!for )(?<!of )(?<!to )(?<!from )(?<!with )(?<!manages )(?<!managing )(?<!runs )"
                     r"(?:the|our|its|their)\s+(?:[a-z]+\s+)?(?:database|datastore|data store)(?:'s)?(?![\w-])"
                     r"(?!\s+(?:manager|operator|controller|team|admin\w*|schema|user|login|role|password|secret)s?\b)")
    return re.compile("|".join(forms)) if forms else None


# a datastore word followed by its owners in a list: "PostgreSQL StatefulSets (geo, rate, profile)", "the postgres
# instances geo, rate and user"; and a list that carries its first name's prefix: "postgres-geo, -rate, -profile"
_STORE_NOUN = (r"(?:postgres(?:ql)?|databases?|dbs?|mysql|mongo(?:db)?|redis|memcached|valkey|caches?)"
               r"(?:\s+(?:statefulsets?|instances?|pods?|servers?|databases?|dbs?|containers?))?")
_OWNER_LIST = re.compile(_STORE_NOUN + r"\s*[(:]?\s*((?:[a-z][\w-]*\s*(?:,|/|\band\b|&)\s*(?:and\s+)?){1,}[a-z][\w-]*)\s*\)?")
_PREFIX_LIST = re.compile(r"\b((?:%s)-)[a-z][\w]*(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+)-[a-z][\w]*)+" % "|".join(_DATASTORE_PREFIXES))


def _distributed_stores(clause: str, known: frozenset[str]) -> list[Mention]:
    """Datastores named through their owners in a list after a datastore word, or as suffixes of the first one's
    prefix (a correlated fault of every database: "all six PostgreSQL StatefulSets (geo, rate, profile, ...)"). Each
    owner counts as its datastore only where exactly one known component is that owner's store of that sort."""
    out: list[Mention] = []
    for match in _OWNER_LIST.finditer(clause):
        cache = bool(re.match(r"(?:redis|memcached|valkey|cache)", match.group(0)))
        for owner in re.finditer(r"[a-z][\w-]*", match.group(1)):
            if owner.group(0) == "and":
                continue
            stores = [k for k in known if k != owner.group(0) and datastore_owner(k) == owner.group(0)
                      and _is_cache(k) == cache]
            if len(stores) == 1:
                out.append(Mention(stores[0], -1, match.start(1) + owner.start(), match.start(1) + owner.end()))
    for match in _PREFIX_LIST.finditer(clause):
        prefix = match.group(1)
        for part in re.finditer(r"-([a-z][\w]*)", match.group(0)[len(prefix):]):
            name = prefix + part.group(1)
            if name in known:
                start = match.start() + len(prefix) + part.start()
                out.append(Mention(name, -1, start, start + len(part.group(0))))
    return out


def find_mentions(clause_list: Sequence[Clause], components: Iterable[str], reserved: Iterable[str] = (), *,
                  weak: bool = False, known: Iterable[str] = ()) -> list[Mention]:
    """Every unambiguous mention of every component, longest names first so ``postgres-geo`` and
    "geo database" are not also counted as ``geo``. ``reserved`` names (the namespace, the app) claim
    their text without being components: "hotel-reservation" is not the ``reservation`` service. A
    component may also be described (:func:`description_pattern`) when the description fits it alone among
    ``known`` (the app's components)."""
    names = [(c.lower(), False) for c in set(components)] + [(r.lower(), True) for r in set(reserved) if r]
    names.sort(key=lambda item: len(item[0]), reverse=True)
    own = {n for n, r in names if not r}
    everyone = frozenset({c.lower() for c in known} | own)
    found: list[Mention] = []
    for index, clause in enumerate(clause_list):
        candidates: list[tuple[Mention, bool]] = []
        # a datastore named through its owner in a list of a datastore word claims that owner's name first
        listed_stores = [attrs.evolve(m, clause=index) for m in _distributed_stores(clause.text, everyone)
                         if m.component in own]
        for name, is_reserved in names:
            # (a clause holds a few of the app's names: one without a name's literal texts is not scanned)
            if _component_literals(name).search(clause.text):
                for match in component_pattern(name).finditer(clause.text):
                    candidates.append((Mention(name, index, match.start(), match.end()), is_reserved))
            literals = None if is_reserved else _description_literals(name, everyone)
            if literals is None or not literals.search(clause.text):
                continue
            described = description_pattern(name, everyone)
            for match in described.finditer(clause.text) if described is not None else ():
                candidates.append((Mention(name, index, match.start(), match.end()), False))
        candidates.sort(key=lambda item: (-(item[0].end - item[0].start), item[0].start))
        candidates = [(m, False) for m in listed_stores] + candidates
        kept: list[Mention] = []
        claimed: list[tuple[int, int]] = []
        for mention, is_reserved in candidates:
            if any(mention.start < e and s < mention.end for s, e in claimed):
                continue
            claimed.append((mention.start, mention.end))
            if not is_reserved:
                kept.append(mention)
        kept.sort(key=lambda m: m.start)
        for position, mention in enumerate(kept):
            short = _short_word(clause.text[mention.start:mention.end], mention.component)
            if ((weak and not short) or _strong(clause.text, mention.start, mention.end, mention.component)
                    or _enumerated(clause.text, kept, position)):
                found.append(mention)
    found.sort(key=lambda m: (m.clause, m.start))
    return found


_LIST_GAP = re.compile(r"^[\s,/&;()]*(?:\b(?:and|or)\b)?[\s,/&;()]*$")


def listed(clause: str, first: Mention, second: Mention) -> bool:
    """Are two mentions neighbours in a list ("geo, rate and user")?"""
    return bool(_LIST_GAP.match(clause[first.end : second.start]))


def _enumerated(clause: str, mentions: Sequence[Mention], position: int) -> bool:
    """A plain-word name in a list of component names ("search, rate and user") is a component."""
    mention = mentions[position]
    if position > 0 and _LIST_GAP.match(clause[mentions[position - 1].end : mention.start]):
        return True
    return position + 1 < len(mentions) and bool(_LIST_GAP.match(clause[mention.end : mentions[position + 1].start]))
