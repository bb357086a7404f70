#!/usr/bin/env python3
"""A complete RL loop on SREGym: ``sregym.make`` + a scripted policy, 20 episodes on the embedded cluster.

The policy reads only observations (never ``info``): it lists the deployments, picks one whose
desired replica count is zero, submits a diagnosis naming it, scales it back, and declares the
mitigation done. With probability ``--wrong`` it instead blames an unrelated component and changes
nothing, so the rewards show both outcomes. Swap ``ScriptedPolicy`` for a model to train one.

    SREGYM_HOME=/tmp/rl-home python examples/rl_training_loop.py --episodes 20

Prints one line per episode (reward, steps, reset time) and a summary; the cluster it starts is
stopped at the end (``close()``).
"""

from __future__ import annotations

import argparse
import logging
import random
import re
import statistics
import time

import structlog

import sregym


class ScriptedPolicy:
    """Investigate with kubectl, then diagnose and fix what the observations show."""

    def __init__(self, wrong_rate: float, rng: random.Random) -> None:
        self.wrong_rate, self.rng = wrong_rate, rng

    def begin(self, briefing: str) -> None:
        self.namespace = re.search(r"in namespace '([^']+)'", briefing).group(1)
        self.wrong = self.rng.random() < self.wrong_rate
        self.plan: list[str] = [f"kubectl get deployments -n {self.namespace}"]
        self.culprit: str | None = None

    def act(self, observation: str) -> str:
        if self.culprit is None and observation.startswith("NAME"):
            # kubectl get deployments: NAME READY UP-TO-DATE AVAILABLE AGE; READY is ready/desired
            for line in observation.splitlines()[1:]:
                fields = line.split()
                if len(fields) > 1 and fields[1].endswith("/0"):
                    self.culprit = fields[0]
                    break
            if self.wrong or self.culprit is None:
                self.plan += ["submit The geo service's database is overloaded by slow queries.", "submit done"]
            else:
                self.plan += [f"submit The deployment {self.culprit} in namespace {self.namespace} was scaled to "
                              f"zero replicas, so the {self.culprit} service has no pods to serve requests.",
                              f"kubectl scale deployment/{self.culprit} --replicas=1 -n {self.namespace}",
                              f"kubectl rollout status deployment/{self.culprit} -n {self.namespace} --timeout=60s",
                              "wait 5", "submit done"]
        return self.plan.pop(0) if self.plan else "submit done"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--problem", default="hotel-scale-zero-rate")
    parser.add_argument("--wrong", type=float, default=0.25, help="share of episodes the policy gets wrong")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cluster", default="sregym-rl-example")
    parser.add_argument("--results", default=None, help="also record every episode into this results directory")
    args = parser.parse_args()
    # the conductor logs every event; a training loop wants warnings only
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    policy = ScriptedPolicy(args.wrong, random.Random(args.seed))
    rewards, resets = [], []
    started = time.monotonic()
    env = sregym.make(args.problem, cluster_name=args.cluster, max_steps=20,
                      results_dir=args.results)
    try:
        for episode in range(args.episodes):
            observation, info = env.reset(seed=args.seed + episode)
            reset = info.get("reset_seconds")  # absent for the first episode (the app's first deploy)
            if reset is not None:
                resets.append(reset)
            policy.begin(observation)
            total, done = 0.0, False
            while not done:
                observation, reward, terminated, truncated, info = env.step(policy.act(observation))
                total += reward
                done = terminated or truncated
            rewards.append(total)
            print(f"episode {episode + 1:2d}: reward {total:.2f}  steps {info['step']:2d}  "
                  f"policy {'wrong' if policy.wrong else 'right'}  "
                  + (f"reset {reset:.1f} s" if reset is not None else "first deploy"), flush=True)
    finally:
        env.close()
    print(f"\n{len(rewards)} episodes in {time.monotonic() - started:.0f} s; mean reward {statistics.mean(rewards):.2f}")
    if resets:
        print(f"reset (graded -> next fault injected): median {statistics.median(resets):.1f} s, max {max(resets):.1f} s")


if __name__ == "__main__":
    main()
