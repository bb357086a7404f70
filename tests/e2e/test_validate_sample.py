"""Problem soundness in CI: a rotating sample of lite problems, and random ad-hoc (fault, target) pairs.

Each CI run validates 1 lite problem with the reference, noop and blind hacker agents (restart-all,
scale-zero-faulty, delete-faulty) and observes its declared symptom; the adaptive hackers
(stub-replace, different-broken-value) run on it too (tests/e2e/test_hackers.py proves them on
wrong-image every run). One problem on another app costs a deploy and about 10 minutes on a loaded
2-core runner, so one is what CI affords. Which one rotates by day, so successive runs cover the
whole suite (`SREGYM_VALIDATE_GROUP=N` picks a group by hand,
`SREGYM_VALIDATE_GROUP_SIZE=N` a larger sample). One ad-hoc pair, drawn at random from primitives
whose reference fix works on any target, must pass with the reference agent (`SREGYM_ADHOC_SEED`
fixes the draw, `SREGYM_ADHOC_PAIRS` draws more). The whole matrix is `sregym validate --suite lite`
(docs/validation.md).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sregym_core.testing.live import daily_sample

pytestmark = [pytest.mark.slow, pytest.mark.heavy, pytest.mark.validation]

BIN = Path(sys.executable).parent
SREGYM = str(BIN / "sregym")
GROUP_SIZE = int(os.environ.get("SREGYM_VALIDATE_GROUP_SIZE", 1))
BLIND_AGENTS = "reference,noop,restart-all,scale-zero-faulty,delete-faulty"
ADAPTIVE_AGENTS = "stub-replace,different-broken-value"
ADAPTIVE_PROBLEMS = 1
ADHOC_PAIRS = int(os.environ.get("SREGYM_ADHOC_PAIRS", 1))
#: primitives whose gold fix is a targeted patch that works on every component they accept
ADHOC_FAULTS = ("wrong-image", "scale-zero", "selector-mismatch", "wrong-target-port", "missing-service",
                "node-selector-missing", "request-too-large", "network-policy-block")


def _installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("sregym_cluster_embedded", "sregym_app_hotel_reservation",
                                                      "sregym_agent_baselines", "sregym_fault_k8s"))


if not _installed():
    pytest.skip("needs the embedded cluster, hotel-reservation, the baseline agents and the k8s faults",
                allow_module_level=True)


def lite_group() -> list[str]:
    listing = subprocess.run([SREGYM, "list-problems", "--suite", "lite", "--json"], capture_output=True, text=True,
                             timeout=120, check=True)
    ids = [p["id"] for p in json.loads(listing.stdout)]
    # the same rotation as the live fault contracts' daily sample (a short last group is topped up)
    return daily_sample(ids, GROUP_SIZE, int(os.environ.get("SREGYM_VALIDATE_GROUP", int(time.time() // 86400))))


def _validate(shared_cluster, problems, results, agents, *extra, timeout: float = 1500):
    args = [SREGYM, "validate", "--cluster", shared_cluster.name, "--results", str(results), "--agents", agents, *extra]
    for problem in problems:
        args += ["--problem", problem]
    proc = subprocess.run(args, env=shared_cluster.environ, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"problems {problems}:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert f"all {len(problems)} problem(s) sound" in proc.stdout
    return proc


# The ad-hoc pair runs first: it is on Hotel Reservation, which the earlier tests left deployed on
# the shared cluster, while the rotating sample may deploy another app (a redeploy costs minutes).
def test_random_adhoc_pairs_pass_with_reference(shared_cluster, tmp_path):
    listing = subprocess.run([SREGYM, "list-faults", "--app", "hotel-reservation", "--json",
                              "--capabilities", "any,embedded,node-agent,snapshot,ld-preload"],
                             capture_output=True, text=True, timeout=120, check=True)
    pairs = [(p["fault"], p["component"]) for p in json.loads(listing.stdout)["pairs"] if p["fault"] in ADHOC_FAULTS]
    seed = int(os.environ.get("SREGYM_ADHOC_SEED", int(time.time())))
    chosen = random.Random(seed).sample(pairs, ADHOC_PAIRS)
    for fault, target in chosen:
        results = tmp_path / f"{fault}-{target}"
        proc = subprocess.run([SREGYM, "run", "--app", "hotel-reservation", "--fault", fault, "--target", target,
                               "--agent", "reference", "--cluster", shared_cluster.name, "--results", str(results)],
                              env=shared_cluster.environ, capture_output=True, text=True, timeout=1500)
        assert proc.returncode == 0, f"seed {seed}, {fault} on {target}: {proc.stderr[-3000:]}"
        record = json.loads((results / "results.jsonl").read_text().splitlines()[0])
        assert record["success"], f"seed {seed}: {fault} on {target} failed: {json.dumps(record['mitigation'])[:2000]}"


# a deploy of another app and 7 attempts, under the load of the other worker's tests (pytest's
# default 600 s cut a Social Network day short in CI)
@pytest.mark.timeout(2400)
def test_rotating_lite_sample_is_sound(shared_cluster, tmp_path):
    problems = lite_group()
    proc = _validate(shared_cluster, problems, tmp_path / "validate", BLIND_AGENTS)
    assert proc.stdout.count("observed (") == len(problems), proc.stdout  # every declared symptom showed
    _validate(shared_cluster, problems[:ADAPTIVE_PROBLEMS], tmp_path / "adaptive", ADAPTIVE_AGENTS, "--no-symptom",
              timeout=800)
