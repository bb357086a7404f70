"""Benchmark ``sregym report``: seconds to write the static report of a large run, and its size.

The run is synthetic but shaped like real ones: the recorded attempts of tests/data/report-results
copied to ``--problems`` problems × ``--agents`` agents × ``--attempts`` attempts, each with a
trajectory of ``--steps`` steps whose tool outputs are ``--output-chars`` long.

    python benchmarks/bench_report.py [--problems 50] [--agents 5] [--attempts 1] [--steps 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "report-results"


def build(directory: Path, problems: int, agents: int, attempts: int, steps: int, output_chars: int) -> int:
    from sregym_core.results import ResultsWriter
    from sregym_core.results.record import AttemptRecord

    templates = [AttemptRecord.from_dict(json.loads(line)) for name in ("geo-image", "mixed")
                 for line in (DATA / name / "results.jsonl").read_text().splitlines()]
    templates = [t for t in templates if t.agent != "hostile"]
    writer = ResultsWriter(directory, validate=False)
    rng = random.Random(7)
    count = 0
    for p in range(problems):
        for a in range(agents):
            for n in range(1, attempts + 1):
                base = rng.choice(templates)
                problem, agent = f"hotel-problem-{p:03d}", f"agent-{a}"
                path = writer.trajectory_path(problem, agent, n, base.run_id)
                start = time.time()
                path.write_text(json.dumps({"schema_version": "ATIF-v1.4", "steps": [
                    {"step_id": i, "source": "agent", "message": f"kubectl get pods -n hotel step {i}",
                     "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "exec_kubectl_cmd_safely",
                                     "arguments": {"cmd": "kubectl get pods"}}],
                     "observation": {"results": [{"source_call_id": f"c{i}", "content": "x" * output_chars}]},
                     "extra": {"timestamp": start + i}} for i in range(1, steps + 1)]}))
                writer.append(base.__class__(**{**base.to_dict(), "problem_id": problem, "agent": agent, "attempt": n,
                                                "trajectory_path": writer.relative(path)}))
                count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=50)
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--attempts", type=int, default=1)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--output-chars", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from sregym_core import logging as sregym_logging
    from sregym_core.results.report import write_report

    sregym_logging.configure(level="warning")

    with tempfile.TemporaryDirectory(prefix="sregym-bench-report-") as tmp:
        results = Path(tmp) / "results"
        count = build(results, args.problems, args.agents, args.attempts, args.steps, args.output_chars)
        started = time.perf_counter()
        out = write_report([results], Path(tmp) / "site" / "report.html")
        seconds = time.perf_counter() - started
        pages = list((out.parent / "report_files" / "attempts").glob("*.html"))
        figures = {
            "attempts": count,
            "steps_per_attempt": args.steps,
            "seconds": round(seconds, 3),
            "ms_per_attempt": round(seconds * 1000 / count, 2),
            "index_kb": round(out.stat().st_size / 1024, 1),
            "attempt_page_kb_mean": round(sum(p.stat().st_size for p in pages) / len(pages) / 1024, 1),
        }
    for key, value in figures.items():
        print(f"{key:>22}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
