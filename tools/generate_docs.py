"""Write the docs' numbers about the catalogue from the CLI, and say where they are stale.

Two kinds of generated text:

* whole pages: ``docs/compatibility.md`` (``sregym list-faults --format markdown``) and
  ``docs/upstream-aliases.md`` (``sregym list-problems --upstream --format markdown``);
* counted claims inside hand-written prose (README.md, SECURITY.md, docs/, the package READMEs):
  each is a :class:`Claim` below, a pattern around the sentence whose groups are numbers, and the
  facts (:func:`load_facts`, from ``sregym list-problems/list-apps/list-faults/schema --json``) the
  numbers must equal. Writing replaces only the numbers; a sentence reworded so that its pattern no
  longer matches is reported, so the claim is updated with the prose and never silently dropped.

:func:`uncounted_numbers` finds numbers in the docs that count catalogue things (problems, ids,
services, faults...) and that no claim covers, outside dated run records (a paragraph that carries a
date, a page dated in its name); tests/test_docs_numbers.py
fails on any, so a new count in the docs needs a claim here.

    python tools/generate_docs.py          # rewrite the pages and every claim's numbers
    python tools/generate_docs.py --check  # exit 1 naming each stale page, claim or uncounted number
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: whole pages, each the output of one CLI command
PAGES = {
    "docs/compatibility.md": ("list-faults", "--format", "markdown"),
    "docs/upstream-aliases.md": ("list-problems", "--upstream", "--format", "markdown"),
}

#: the docs whose numbers are checked: every hand-written page (the two generated pages are checked
#: whole; docs/validation.md is a dated run log and docs/validation-status.md is written from it by
#: tools/validation_status.py)
NOT_SCANNED = {*PAGES, "docs/validation.md", "docs/validation-status.md"}

#: upstream SREGym's application codes (``list-problems --upstream``) and the app each is here, if any
UPSTREAM_APPS = {"HR": "hotel-reservation", "AS": "astronomy-shop", "SN": "social-network",
                 "TT": "train-ticket", "BHR": None, "FC": "fleetcast"}

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
         "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]


def doc_paths() -> list[str]:
    paths = ["README.md", "SECURITY.md", *(f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md")))]
    for group in ("apps", "faults", "plugins", "agents", "libs"):
        paths += [str(p.relative_to(ROOT)) for p in sorted((ROOT / group).glob("*/README.md"))]
    # a page dated in its name (docs/attacks-2026-11-29.md) is a record of that day as a whole
    return [p for p in paths if p not in NOT_SCANNED and not DATED.search(Path(p).name)]


def sregym(*args: str) -> str:
    """The CLI's output, with the test stand-in (the ``noop`` plugin) left out as in the generated pages."""
    exe = Path(sys.executable).parent / "sregym"
    env = {**os.environ, "SREGYM_DISABLE_PLUGINS": "noop"}
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300, check=True, env=env).stdout


# --------------------------------------------------------------------------------------------- facts

@cache
def load_facts() -> dict[str, int]:
    """Every count a claim may state, by key, from the CLI."""
    problems = json.loads(sregym("list-problems", "--json"))
    upstream = json.loads(sregym("list-problems", "--upstream", "--json"))
    apps = json.loads(sregym("list-apps", "--json"))
    matrix = json.loads(sregym("list-faults", "--json"))
    facts: Counter[str] = Counter()
    _problem_facts(facts, problems)
    _app_facts(facts, apps)
    _upstream_facts(facts, upstream, {a["name"] for a in apps})
    _fault_facts(facts, matrix, problems)
    for fault, param in (("flagd-flag", "flag"), ("tt-flag", "flag"), ("tt-flag", "decoys")):
        schema = json.loads(sregym("schema", f"fault/{fault}"))["properties"][param]
        facts[f"enum:{fault}:{param}"] = len(schema.get("enum") or schema["items"]["enum"])
    _default_facts(facts)
    return dict(facts)


def _problem_facts(facts: Counter[str], problems: list[dict]) -> None:
    facts["problems"] = len(problems)
    facts["lite"] = sum("lite" in p["tags"] for p in problems)
    for p in problems:
        facts[f"problems:{p['app']}"] += 1
        facts[f"lite:{p['app']}"] += "lite" in p["tags"]
        facts[f"aliases:{p['app']}"] += len(p["aliases"])
        for tag in p["tags"]:
            facts[f"tagged:{p['app']}:{tag}"] += 1
        for fault in {f["fault"] for f in p["faults"] if f["role"] == "fault"}:
            facts[f"problems:{p['app']}:fault:{fault}"] += 1


def _app_facts(facts: Counter[str], apps: list[dict]) -> None:
    facts["apps"] = len(apps)
    for app in apps:
        name = app["name"]
        for component in app["components"]:
            roles = component["roles"]
            for role in roles:
                facts[f"role:{name}:{role}"] += 1
            # a request-serving service of the app's own: not the edge proxy, not the flag server
            if (any(r.startswith("service:") for r in roles) and not any(r.startswith("proxy:") for r in roles)
                    and component["name"] != "flagd"):
                facts[f"services:{name}"] += 1
                facts[f"backends:{name}"] += "frontend" not in roles


def _upstream_facts(facts: Counter[str], upstream: list[dict], installed: set[str]) -> None:
    facts["upstream:ids"] = len(upstream)
    facts["upstream:equivalent"] = sum(r["equivalent"] is not None for r in upstream)
    facts["upstream:missing"] = sum(r["equivalent"] is None for r in upstream)
    facts["upstream:lite"] = sum(r["lite"] for r in upstream)
    facts["upstream:lite-equivalent"] = sum(r["lite"] and r["equivalent"] is not None for r in upstream)
    codes = {r["upstream_app"] for r in upstream}
    if not codes <= set(UPSTREAM_APPS):
        raise SystemExit(f"upstream apps {sorted(codes - set(UPSTREAM_APPS))} are new: add them to UPSTREAM_APPS")
    facts["upstream:apps"] = len(codes)
    facts["upstream:apps-here"] = sum(UPSTREAM_APPS[c] in installed for c in codes)
    facts["upstream:apps-not-here"] = facts["upstream:apps"] - facts["upstream:apps-here"]
    for r in upstream:
        facts[f"upstream:missing:{r['upstream_app']}"] += r["equivalent"] is None


def _fault_facts(facts: Counter[str], matrix: dict, problems: list[dict]) -> None:
    # faults only one app can take (its own: flagd flags, its queue...), and the problems on them
    apps_of: dict[str, set[str]] = {}
    for pair in matrix["pairs"]:
        if pair["viable"]:
            apps_of.setdefault(pair["fault"], set()).add(pair["app"])
    for p in problems:
        own = any(apps_of.get(f["fault"]) == {p["app"]} for f in p["faults"] if f["role"] == "fault")
        facts[f"problems:{p['app']}:{'app-only' if own else 'shared'}"] += 1
    faults = [f for f in matrix["faults"] if not f["stand_in"]]
    embedded_only = {f["name"] for f in faults if "embedded" in f["capabilities"]}
    facts["faults"] = len(faults)
    facts["pairs"] = matrix["total"]
    facts["faults:embedded"] = len(embedded_only)
    facts["problems:embedded"] = sum(any(f["fault"] in embedded_only for f in p["faults"]) for p in problems)
    facts["lite:embedded"] = sum("lite" in p["tags"] and any(f["fault"] in embedded_only for f in p["faults"])
                                 for p in problems)


def _default_facts(facts: Counter[str]) -> None:
    """Constants of the core the README states: the checklist's length, the grading defaults."""
    from sregym_core.conductor.attempt import AttemptSettings
    from sregym_core.oracles.judge import CHECKLIST

    facts["checklist"] = len(CHECKLIST)
    defaults = AttemptSettings()  # what `sregym run` grades with unless told otherwise
    facts["settle_timeout_s"], facts["reconnect_grace_s"] = int(defaults.settle_timeout), int(defaults.reconnect_grace)


# -------------------------------------------------------------------------------------------- claims

@dataclass(frozen=True)
class Claim:
    """Counts stated in one sentence: ``pattern`` (whitespace matches any run of whitespace, so a
    sentence may wrap) has one group per number, each equal to the fact of the same position."""

    path: str
    pattern: str
    facts: tuple[str, ...]
    #: the sentence is being written in another change: checked once present, not required before
    pending: bool = False

    def regex(self) -> re.Pattern[str]:
        return re.compile(re.sub(r"(?<!\\) ", r"\\s+", self.pattern))


N = r"(\d+|[a-z]+)"  # a count, in digits or in words

CLAIMS: tuple[Claim, ...] = (
    # README.md
    Claim("README.md", rf"deploys Hotel Reservation \({N} services, {N} PostgreSQL servers, {N} memcached",
          ("services:hotel-reservation", "role:hotel-reservation:db:postgres",
           "role:hotel-reservation:cache:memcached")),
    Claim("README.md", rf"judged by a {N}-question checklist", ("checklist",)),
    Claim("README.md", rf"the judge's {N} checklist answers", ("checklist",)),
    Claim("README.md", rf"the {N}-question checklist\)", ("checklist",)),
    Claim("README.md", rf"\(waiting at most {N} s\) plus {N} s for clients to reconnect",
          ("settle_timeout_s", "reconnect_grace_s")),
    Claim("README.md", rf"{N} of upstream's {N} ids are aliases", ("upstream:equivalent", "upstream:ids")),
    Claim("README.md", rf"the {N} of {N} lite ids that have an equivalent", ("upstream:lite-equivalent", "upstream:lite")),
    Claim("README.md", rf"Not compatible: {N} of upstream's {N} applications", ("upstream:apps-not-here", "upstream:apps")),
    Claim("README.md", rf"so the number of\s+upstream ids with no equivalent is {N}", ("upstream:missing",)),
    Claim("README.md", rf"\({N} curated Hotel Reservation problems, tag `noise`", ("tagged:hotel-reservation:noise",)),
    Claim("README.md", rf"a hand-labelled set of {N} diagnoses", ("labelled:labelled.yaml",)),
    Claim("README.md", rf"Hotel Reservation \({N} gRPC/HTTP services, {N} PostgreSQL, {N} memcached, workload "
                       rf"generator\) and {N} curated problems \({N} lite\)",
          ("services:hotel-reservation", "role:hotel-reservation:db:postgres", "role:hotel-reservation:cache:memcached",
           "problems:hotel-reservation", "lite:hotel-reservation")),
    Claim("README.md", rf"nginx edge, {N} gRPC/HTTP services, {N} queue consumers",
          ("services:astronomy-shop", "role:astronomy-shop:queue-consumer")),
    Claim("README.md", rf"and `cache-memory-flood`; {N} curated problems \({N} lite\)",
          ("problems:astronomy-shop", "lite:astronomy-shop")),
    Claim("README.md", rf"TrainTicket: a gateway and {N} `ts-\*` services", ("backends:train-ticket",)),
    Claim("README.md", rf"flagd flags guarding {N} of the fault-analysis study's", ("enum:tt-flag:flag",)),
    Claim("README.md", rf"fault `tt-flag`; login tokens \(a JWT checked against each service's clock\); {N} curated "
                       rf"problems, {N} lite", ("problems:train-ticket", "lite:train-ticket")),
    Claim("README.md", rf"a gateway, {N} Thrift services, media-frontend; {N} PostgreSQL document stores, {N} Redis, "
                       rf"{N} memcached",
          ("role:social-network:service:thrift", "role:social-network:db:postgres", "role:social-network:cache:redis",
           "role:social-network:cache:memcached")),
    Claim("README.md", rf"and {N} curated problems \({N} lite\) carrying {N} upstream Social Network ids",
          ("problems:social-network", "lite:social-network", "aliases:social-network")),
    # docs/
    Claim("docs/real-clusters.md", rf"Today that is {N} faults of the catalogue", ("faults:embedded",)),
    Claim("docs/real-clusters.md", rf"They are used by {N} curated problems, {N} of them in `lite`",
          ("problems:embedded", "lite:embedded")),
    # package READMEs
    Claim("apps/sregym-app-astronomy-shop/README.md", rf"The {N} demo flags are shipped", ("enum:flagd-flag:flag",)),
    Claim("apps/sregym-app-astronomy-shop/README.md",
          rf"\*\*Problems\*\*: {N} curated \(`problems/`\): {N} flag problems [\s\S]*? {N} more on faults only this app "
          rf"has [\s\S]*? and {N} on faults shared with the other apps",
          ("problems:astronomy-shop", "problems:astronomy-shop:fault:flagd-flag", "problems:astronomy-shop:app-only-other",
           "problems:astronomy-shop:shared")),
    Claim("apps/sregym-app-astronomy-shop/README.md", rf"{N} in `lite`", ("lite:astronomy-shop",)),
    Claim("apps/sregym-app-social-network/README.md",
          rf"\*\*Problems\*\*: {N} curated problems \(`problems/`\), {N} tagged `lite`, with the {N} upstream Social "
          rf"Network ids", ("problems:social-network", "lite:social-network", "aliases:social-network")),
    Claim("apps/sregym-app-train-ticket/README.md", rf"\*\*Feature flags\*\*: {N} `tt-feat-N` flags",
          ("enum:tt-flag:all",)),
    Claim("apps/sregym-app-train-ticket/README.md", rf"expresses it \({N} flags, below\); the other {N}",
          ("enum:tt-flag:flag", "enum:tt-flag:decoys")),
    Claim("plugins/sregym-judge-llm/README.md", rf"answers the {N}-question checklist", ("checklist",)),
    Claim("plugins/sregym-judge-rules/README.md", rf"It answers the {N}-question checklist", ("checklist",)),
    Claim("plugins/sregym-judge-rules/README.md", rf"\| `labelled.yaml` \({N} problems, tuned on it\) \| {N} \|",
          ("labelled-problems:labelled.yaml", "labelled:labelled.yaml")),
    Claim("plugins/sregym-judge-rules/README.md", rf"data/labelled.yaml`: {N} diagnoses of {N} curated Hotel Reservation",
          ("labelled:labelled.yaml", "labelled-problems:labelled.yaml")),
    Claim("plugins/sregym-judge-rules/README.md", rf"`labelled-holdout.yaml` \({N} diagnoses, {N} other problems\)",
          ("labelled:labelled-holdout.yaml", "labelled-problems:labelled-holdout.yaml")),
    Claim("plugins/sregym-judge-rules/README.md", rf"`labelled-apps.yaml` \({N} diagnoses, {N} problems: {N} Astronomy "
                                                   rf"Shop, {N} Social Network, {N} TrainTicket",
          ("labelled:labelled-apps.yaml", "labelled-problems:labelled-apps.yaml",
           "labelled-problems:labelled-apps.yaml:astronomy-shop", "labelled-problems:labelled-apps.yaml:social-network",
           "labelled-problems:labelled-apps.yaml:train-ticket")),
    Claim("plugins/sregym-judge-rules/README.md", rf"the app's universal text fails all {N} \(and {N}\) problems",
          ("labelled-problems:labelled.yaml", "labelled-problems:labelled-holdout.yaml")),
    # the blind sets of issue #35 (tests/data/judge_blind)
    Claim("plugins/sregym-judge-rules/README.md", rf"`tuning.jsonl` \({N} diagnoses, {N} problems, {N} voices\)",
          ("blind:tuning.jsonl", "blind-problems:tuning.jsonl", "blind-voices:tuning.jsonl")),
    Claim("plugins/sregym-judge-rules/README.md", rf"`heldout.jsonl` \({N} diagnoses, {N} other problems\)",
          ("blind:heldout.jsonl", "blind-problems:heldout.jsonl")),
)

#: counts the scanner finds that are not the catalogue's: (doc, the words found, why)
NOT_COUNTS: tuple[tuple[str, str, str], ...] = (
    ("docs/rl.md", "four apps", "the apps of the dated run record '2026-11-27 (6)' above it"),
    ("docs/scale.md", "40 problems", "the verdicts of the dated run record '2026-11-28 (1)' above it"),
    ("apps/sregym-app-train-ticket/README.md", "two services", "the title of the study's fault F11"),
)


def derived(facts: dict[str, int]) -> dict[str, int]:
    """Facts that are sums of others, and the sizes of the judge's shipped labelled sets."""
    out = dict(facts)
    out["enum:tt-flag:all"] = facts["enum:tt-flag:flag"] + facts["enum:tt-flag:decoys"]
    for app in {k.split(":")[1] for k in facts if k.startswith("problems:") and k.count(":") == 1}:
        out[f"problems:{app}:app-only-other"] = (facts.get(f"problems:{app}:app-only", 0)
                                                 - facts.get(f"problems:{app}:fault:flagd-flag", 0))
    out.update(labelled_sets())
    out.update(blind_sets())
    return out


def blind_sets() -> dict[str, int]:
    """Diagnoses, problems and voices of each blind set (JSON Lines) under tests/data/judge_blind."""
    out = {}
    for path in sorted((ROOT / "tests" / "data" / "judge_blind").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        out[f"blind:{path.name}"] = len(rows)
        out[f"blind-problems:{path.name}"] = len({r["problem_id"] for r in rows})
        out[f"blind-voices:{path.name}"] = len({r.get("voice") for r in rows})
    return out


def labelled_sets() -> dict[str, int]:
    """Diagnoses in each labelled set judge-rules ships, read as ``sregym judge calibrate --dataset`` reads them."""
    try:
        from sregym_judge_rules.calibration import labelled_set_path, load_dataset
    except ModuleNotFoundError:
        return {}
    import yaml

    out = {}
    for path in sorted(labelled_set_path().parent.iterdir()):
        if path.suffix not in (".yaml", ".jsonl"):
            continue
        items = load_dataset(path)
        out[f"labelled:{path.name}"] = len(items)
        out[f"labelled-problems:{path.name}"] = len({i.problem for i in items})
        if path.suffix == ".yaml":
            for entry in yaml.safe_load(path.read_text())["problems"].values():
                if "app" in entry:
                    out[f"labelled-problems:{path.name}:{entry['app']}"] = out.get(
                        f"labelled-problems:{path.name}:{entry['app']}", 0) + 1
    return out


def render(value: int, old: str) -> str:
    """``value`` written as the doc wrote the number it replaces (digits, or a word up to twenty)."""
    if old.isdigit() or value >= len(WORDS):
        return str(value)
    if old.lower() == "none" and value == 0:
        return old
    word = WORDS[value]
    return word.capitalize() if old[:1].isupper() else word


def apply_claims(path: str, text: str, facts: dict[str, int]) -> tuple[str, list[str]]:
    """``text`` with every claim of ``path`` brought up to date, and what was wrong (one line each)."""
    problems = []
    for claim in (c for c in CLAIMS if c.path == path):
        matches = list(claim.regex().finditer(text))
        if not matches and claim.pending:
            continue
        if len(matches) != 1:
            problems.append(f"{path}: claim /{claim.pattern}/ matches {len(matches)} times (expected once): "
                            "reword the claim in tools/generate_docs.py with the sentence")
            continue
        match = matches[0]
        pieces, last = [], match.start()
        for i, key in enumerate(claim.facts, start=1):
            if key not in facts:
                problems.append(f"{path}: no fact {key!r} for /{claim.pattern}/")
                continue
            old = match.group(i)
            new = render(facts[key], old)
            if old.lower() != new.lower():
                line = text.count("\n", 0, match.start(i)) + 1
                problems.append(f"{path}:{line}: says {old}, the CLI says {new} ({key})")
            pieces += [text[last:match.start(i)], new]
            last = match.end(i)
        text = text[:match.start()] + "".join(pieces) + text[last:]
    return text, problems


# ----------------------------------------------------------------------------- numbers nobody checks

#: nouns whose count a doc may state only through a claim
COUNTED = (r"(?:curated |upstream |lite |viable |hand-labelled |gRPC/HTTP |Thrift |`ts-\*` |demo |`tt-feat-N` )?"
           r"(?:problems?|ids|faults|services|pairs|applications|apps|diagnoses|flags|PostgreSQL|memcached|Redis|"
           r"queue consumers|in `lite`|tagged `lite`|lite\b|-question|checklist answers|curated|noise sources|"
           r"tox environments|packages)")
NUMBER = r"\b(?:\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)"
COUNT = re.compile(rf"{NUMBER}(?: of (?:upstream's )?(?:the )?\d+)?(?:\s|\()+{COUNTED}", re.I)
#: a dated run record or measurement: its numbers are what that run saw, not the catalogue today
DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def _paragraphs(text: str):
    """(start, end) of each paragraph outside fenced code (a table row is a paragraph of its own)."""
    pos, fenced = 0, False
    start = None
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        elif not fenced and stripped and not stripped.startswith("|") and start is None:
            start = pos
        if start is not None and (fenced or not stripped or stripped.startswith("|")):
            yield start, pos
            start = None
        if not fenced and stripped.startswith("|"):
            yield pos, pos + len(line)
        pos += len(line)
    if start is not None:
        yield start, pos


def uncounted_numbers(path: str, text: str) -> list[str]:
    """Counts of catalogue things in ``text`` that no claim covers, outside dated records."""
    covered = []
    for claim in (c for c in CLAIMS if c.path == path):
        covered += [m.span() for m in claim.regex().finditer(text)]
    found = []
    for start, end in _paragraphs(text):
        paragraph = text[start:end]
        if DATED.search(paragraph):
            continue
        for m in COUNT.finditer(paragraph):
            at = start + m.start()
            if any(doc == path and words == m.group(0) for doc, words, _ in NOT_COUNTS):
                continue
            if not any(a <= at < b for a, b in covered):
                found.append(f"{path}:{text.count(chr(10), 0, at) + 1}: '{m.group(0)}' is a count no claim checks: "
                             "add a Claim in tools/generate_docs.py (or date it as a run record)")
    return found


# ---------------------------------------------------------------------------------------------- main

def stale_pages() -> list[str]:
    """The generated pages that differ from the CLI's output today."""
    return [f"{page} is stale: run python tools/generate_docs.py"
            for page, args in PAGES.items() if (ROOT / page).read_text() != sregym(*args)]


def stale_claims() -> list[str]:
    """Every claim whose numbers differ from the CLI's, or whose sentence is gone, and every count
    no claim checks, one line each (empty when the docs are current)."""
    problems = []
    facts = derived(load_facts())
    for path in doc_paths():
        text = (ROOT / path).read_text()
        problems += apply_claims(path, text, facts)[1]
        problems += uncounted_numbers(path, text)
    claimed = {c.path for c in CLAIMS}
    problems += [f"{p}: claims for a doc that is not scanned" for p in sorted(claimed - set(doc_paths()))]
    return problems


def stale() -> list[str]:
    return stale_pages() + stale_claims()


def write() -> list[str]:
    """Regenerate the pages and every claim's numbers; returns what cannot be fixed by writing."""
    for page, args in PAGES.items():
        (ROOT / page).write_text(sregym(*args))
    facts = derived(load_facts())
    left = []
    for path in doc_paths():
        text = (ROOT / path).read_text()
        new, problems = apply_claims(path, text, facts)
        if new != text:
            (ROOT / path).write_text(new)
        left += [p for p in problems if "says" not in p]
        left += uncounted_numbers(path, new)
    return left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when anything is stale")
    args = parser.parse_args(argv)
    problems = stale() if args.check else write()
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
