"""N RL environments stepped together (Gymnasium's vector conventions, without numpy).

Each sub-environment has its own cluster, agent surface and event-loop thread, so ``step`` runs the
N tool calls at the same time. Observations, rewards and flags come back as tuples of length N.
Autoreset is Gymnasium's *same-step* mode: a sub-environment whose episode ended is reset within
the same ``step``; its last observation and info are in ``infos[i]["final_observation"]`` /
``infos[i]["final_info"]`` and the returned observation is the next episode's first.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import UsageError
from .env import SregymEnv


class SregymVectorEnv:
    metadata: dict[str, Any] = {"autoreset_mode": "SameStep"}

    def __init__(self, envs: Sequence[SregymEnv]) -> None:
        if not envs:
            raise UsageError("a vector environment needs at least one environment")
        self.envs = list(envs)
        self.num_envs = len(self.envs)
        self._pool = ThreadPoolExecutor(max_workers=self.num_envs, thread_name_prefix="sregym-vec")
        self._closed = False

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[tuple[str, ...], tuple[dict[str, Any], ...]]:
        """Reset every sub-environment; an int seed seeds them ``seed, seed+1, ...`` (as Gymnasium does)."""
        seeds = self._seeds(seed)
        results = self._map(lambda env, s: env.reset(seed=s, options=options), seeds)
        return tuple(r[0] for r in results), tuple(r[1] for r in results)

    def step(self, actions: Sequence[Any]) -> tuple[tuple[str, ...], tuple[float, ...], tuple[bool, ...],
                                                     tuple[bool, ...], tuple[dict[str, Any], ...]]:
        if len(actions) != self.num_envs:
            raise UsageError(f"expected {self.num_envs} actions, got {len(actions)}")

        def one(env: SregymEnv, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
            observation, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                next_observation, next_info = env.reset()
                info = {**next_info, "final_observation": observation, "final_info": info}
                observation = next_observation
            return observation, reward, terminated, truncated, info

        results = self._map(one, actions)
        return (tuple(r[0] for r in results), tuple(r[1] for r in results), tuple(r[2] for r in results),
                tuple(r[3] for r in results), tuple(r[4] for r in results))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            errors = [f.exception() for f in [self._pool.submit(env.close) for env in self.envs]]
        finally:
            self._pool.shutdown(wait=True)
        raised = [e for e in errors if e is not None]
        if raised:
            raise raised[0]

    def __enter__(self) -> SregymVectorEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _map(self, func, args: Sequence[Any]) -> list[Any]:
        if self._closed:
            raise UsageError("this vector environment is closed")
        futures = [self._pool.submit(func, env, arg) for env, arg in zip(self.envs, args, strict=True)]
        return [f.result() for f in futures]

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int):
            return [seed + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise UsageError(f"expected {self.num_envs} seeds, got {len(seeds)}")
        return seeds
