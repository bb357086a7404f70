"""Leave-half-the-problems-out: how the rules judge does on problems whose items its author did not read.

The tuned-on blind sets are split by problem id (a stable hash, so every set splits the same way): half
``A`` is the half whose misses may be read while changing the judge, half ``B`` the half whose items are
never shown. The figure on ``B`` predicts how the judge grades text it was not tuned to, better than the
figure on a whole set it was tuned on. It also reports the CPU time of a judgement.

    .venv/bin/python plugins/sregym-judge-rules/tools/split_half.py tests/data/judge_blind/heldout3.jsonl \
        [--show A] [--sets more.jsonl ...]

``--show A`` lists the misses of half A only; half B's are never listed (that is the point). ``--per-app`` gives each
half's figures per app, and ``--unread-app APP`` never lists that app's misses either (leave-one-app-out: the fifth
round of issue #35 read none of Astronomy Shop's). Never run it on a set that is still held out (it refuses
``heldout16.jsonl``; ``heldout15.jsonl`` is tuned on from 2026-11-30 16:26 UTC, ``heldout14.jsonl`` from 15:40 UTC, ``heldout13.jsonl`` from 13:20 UTC, ``heldout12.jsonl`` from 12:52 UTC, ``heldout10.jsonl`` and ``heldout11.jsonl`` from 2026-11-30 12:20 UTC, ``heldout9.jsonl`` is tuned on from 2026-11-30 00:57 UTC, ``heldout8.jsonl`` from 2026-11-30 00:25 UTC,
``heldout7.jsonl`` from 2026-11-29 23:55 UTC).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import Counter

from sregym_judge_rules.calibration import cohen_kappa, load_blind_set
from sregym_judge_rules.rules import RulesJudge


#: the blind sets no judge author may read yet (aggregate figures only, by `sregym judge calibrate --set`)
HELD_OUT = ("heldout18", "heldout19", "heldout20", "heldout21", "heldout22", "heldout23", "heldout24")


def half_of(problem_id: str) -> str:
    """``A`` or ``B``, from a hash of the problem id: the same problem is in the same half in every set."""
    return "A" if hashlib.sha256(problem_id.encode()).digest()[0] % 2 == 0 else "B"


def figures(rows: list[tuple[bool, bool]]) -> str:
    labels = [label for label, _judged in rows]
    judged = [j for _label, j in rows]
    fails = sum(1 for label in labels if not label)
    passes = len(labels) - fails
    fp = sum(1 for label, j in rows if j and not label)
    ff = sum(1 for label, j in rows if label and not j)
    kappa = cohen_kappa(labels, judged)
    return (f"{len(rows):4d} items  FP {fp:3d}/{fails:<3d} {100 * fp / max(fails, 1):5.1f} %  "
            f"FF {ff:3d}/{passes:<3d} {100 * ff / max(passes, 1):5.1f} %  kappa {kappa if kappa is None else round(kappa, 3)}")


def confusion(judge: RulesJudge, paths: list[str], show: bool = False, half: str = "") -> None:
    """How often a correct diagnosis of one problem passes for another problem of its app with other faults: a
    false pass rate that needs no label (the text is right about something else)."""
    items = [i for path in paths for i in load_blind_set(path) if i.label and (not half or half_of(i.problem) == half)]
    problems = {i.problem: i for i in items}
    passes = judged = 0
    by_half = Counter()
    for item in items:
        faults = {t.fault for t in item.truth}
        for other in problems.values():
            if other.app != item.app or other.problem == item.problem or {t.fault for t in other.truth} & faults:
                continue
            judged += 1
            verdict = judge.judge(item.submission, other.truth, app_components=other.app_components,
                                  app_namespace=other.app_namespace)
            if verdict.passed:
                passes += 1
                by_half[half_of(item.problem)] += 1
                if show and half_of(item.problem) == "A":
                    found = verdict.inputs.get("evidence", {}).get("mechanism")
                    print(f"  passes for {other.problem}: {item.id} ({item.problem}) {found}")
    print(f"confusion: {passes} passes of {judged} judgements (by the half of the diagnosis's problem: {dict(by_half)})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--show", choices=("A",), help="list the misses of half A (never of half B)")
    parser.add_argument("--category", action="store_true", help="per category figures for each half")
    parser.add_argument("--per-app", action="store_true", help="per app figures for each half (leave-one-app-out)")
    parser.add_argument("--per-voice", action="store_true", help="per voice figures for each half")
    parser.add_argument("--unread-app", default="",
                        help="an app whose misses are never listed, even in half A (leave-one-app-out)")
    parser.add_argument("--confusion", action="store_true",
                        help="judge every correct diagnosis against every other problem of its app with other faults")
    args = parser.parse_args(argv)
    held_out = [s for s in args.sets if any(name in s for name in HELD_OUT)]
    if held_out:
        print(f"{', '.join(held_out)}: held out, not judged here", file=sys.stderr)
        return 2
    judge = RulesJudge()
    cpu = 0.0
    count = 0
    for path in args.sets:
        items = load_blind_set(path)
        rows: dict[str, list[tuple[bool, bool]]] = {"A": [], "B": []}
        per_category: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
        per_app: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
        per_voice: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
        misses = []
        for item in items:
            start = time.process_time()
            verdict = judge.judge(item.submission, item.truth, app_components=item.app_components,
                                  app_namespace=item.app_namespace)
            cpu += time.process_time() - start
            count += 1
            half = half_of(item.problem)
            rows[half].append((bool(item.label), verdict.passed))
            per_category.setdefault((half, item.category), []).append((bool(item.label), verdict.passed))
            per_app.setdefault((half, item.app), []).append((bool(item.label), verdict.passed))
            per_voice.setdefault((half, item.voice), []).append((bool(item.label), verdict.passed))
            if half == "A" and verdict.passed != item.label and item.app != args.unread_app:
                misses.append((item, verdict))
        everything = rows["A"] + rows["B"]
        problems = Counter(half_of(i.problem) for i in {i.problem: i for i in items}.values())
        print(f"{path}")
        print(f"  all      {figures(everything)}")
        print(f"  half A   {figures(rows['A'])}   ({problems['A']} problems)")
        print(f"  half B   {figures(rows['B'])}   ({problems['B']} problems)")
        if args.category:
            for (half, category), r in sorted(per_category.items()):
                print(f"    {half} {category:26s} {figures(r)}")
        if args.per_app:
            for (half, app), r in sorted(per_app.items()):
                print(f"    {half} {app:26s} {figures(r)}")
        if args.per_voice:
            for (half, voice), r in sorted(per_voice.items()):
                print(f"    {half} {voice:26s} {figures(r)}")
        if args.show == "A":
            for item, verdict in misses:
                kind = "FALSE PASS" if verdict.passed else "FALSE FAIL"
                print(f"--- {kind} {item.id} {item.problem} [{item.category}/{item.voice}]")
                print("   ", item.submission.replace("\n", "\n    "))
                print("    truth:", "; ".join(f"{t.fault}: {t.mechanism}" for t in item.truth))
                print("    gates:", verdict.inputs.get("gates"))
                print("    answers:", {k: v.answer for k, v in verdict.answers_by_id().items()}
                      if hasattr(next(iter(verdict.answers_by_id().values()), None), "answer")
                      else verdict.answers_by_id())
    if args.confusion:
        confusion(judge, args.sets, show=args.show == "A")
    print(f"CPU per judgement: {1000 * cpu / max(count, 1):.2f} ms over {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
