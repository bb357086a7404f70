"""The RL environment API: ``sregym.make(problem_or_suite, ...)`` and ``sregym.make_vec(..., num_envs=N)``.

Everything is found through the plugin host (apps, faults, judges, the cluster provider), as the CLI
finds it: the core imports no plugin. See :mod:`.env` for the episode protocol and
``examples/rl_training_loop.py`` for a complete loop.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .actions import TOOL_HELP, InvalidAction, ToolCall, parse_action
from .env import POLICY_AGENT, EpisodeOver, SregymEnv, default_reward
from .vector import SregymVectorEnv

__all__ = ["make", "make_vec", "SregymEnv", "SregymVectorEnv", "ToolCall", "parse_action", "InvalidAction",
           "EpisodeOver", "default_reward", "TOOL_HELP", "POLICY_AGENT"]


def make(problems: str | Sequence[str], *, provider: str | None = None, cluster_name: str = "sregym-rl",
         keep_cluster: bool = False, max_steps: int = 50, stages: Sequence[str] | None = None,
         agent_timeout: float | None = None, oracle_window: float | None = None, judge: str = "judge-rules",
         judge_model: str | None = None, observability: bool = True, results_dir: str | os.PathLike | None = None,
         workdir: str | os.PathLike | None = None, reward_fn: Callable[[Any], float] = default_reward,
         host: Any = None) -> SregymEnv:
    """An RL environment over one problem id, several ids, or a suite (``"lite"``, ``"sregym-lite"``).

    The cluster (``cluster_name`` of ``provider``, default the embedded one) comes up on the first
    ``reset``; the env stops it at ``close()`` unless ``keep_cluster`` (then it is left running, and
    a running cluster of that name is reused either way).
    """
    from ..clusters import get_cluster
    from ..conductor.attempt import AttemptSettings
    from ..plugins import new_plugin_host

    host = host or new_plugin_host()
    chosen = _select(host, problems)
    if oracle_window is None and os.environ.get("SREGYM_ORACLE_WINDOW"):  # as `sregym run --oracle-window`
        oracle_window = float(os.environ["SREGYM_ORACLE_WINDOW"])
    settings = AttemptSettings(judge=judge, judge_model=judge_model, agent_timeout=agent_timeout,
                               oracle_window=oracle_window, stages=tuple(stages) if stages else None)
    cluster = get_cluster(host, provider=provider, name=cluster_name, owned=not keep_cluster, exclusive=True)
    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"sregym-rl-{cluster_name}-"))
    return SregymEnv(chosen, host=host, cluster=cluster, owns_cluster=not keep_cluster, workdir=work,
                     max_steps=max_steps, settings=settings, observability=observability,
                     results_dir=Path(results_dir) if results_dir else None, reward_fn=reward_fn,
                     name=f"sregym-env-{cluster_name}")


def make_vec(problems: str | Sequence[str], *, num_envs: int, cluster_name: str = "sregym-rl",
             results_dir: str | os.PathLike | None = None, **options: Any) -> SregymVectorEnv:
    """``num_envs`` environments side by side, each on its own cluster ``<cluster_name>-<i>``; every
    sub-environment records into ``results_dir`` (one results file, one record per episode)."""
    if num_envs < 1:
        raise UsageError(f"num_envs must be at least 1, got {num_envs}")
    envs: list[SregymEnv] = []
    try:
        for index in range(num_envs):
            envs.append(make(problems, cluster_name=f"{cluster_name}-{index}", results_dir=results_dir, **options))
    except BaseException:
        for env in envs:
            env.close()
        raise
    return SregymVectorEnv(envs)


def _select(host: Any, problems: str | Sequence[str]) -> list[Any]:
    from ..cli._select import select_problems
    from ..upstream_catalog import LITE_SUITE

    names = [problems] if isinstance(problems, str) else list(problems)
    if not names:
        raise UsageError("make() needs a problem id, a list of ids or a suite name")
    known = host.get_problems()
    if len(names) == 1 and names[0] not in known and names[0] != LITE_SUITE and not _is_problem_path(names[0]):
        suites = {s for p in known.values() for s in (*p.tags, *p.suites)}
        if names[0] in suites:
            return select_problems(host, suite=names[0], say=lambda _text: None)
    if names == [LITE_SUITE]:
        return select_problems(host, suite=LITE_SUITE, say=lambda _text: None)
    return select_problems(host, problem=tuple(names), say=lambda _text: None)


def _is_problem_path(name: str) -> bool:
    return "/" in name or name.endswith((".yaml", ".yml", ".json"))
