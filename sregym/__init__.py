"""``import sregym``: the RL environment API (``sregym.make``, ``sregym.make_vec``).

A thin alias of :mod:`sregym_core.rl`, so training code reads as Gymnasium code does.
"""

from sregym_core.rl import (
    POLICY_AGENT,
    TOOL_HELP,
    EpisodeOver,
    InvalidAction,
    SregymEnv,
    SregymVectorEnv,
    ToolCall,
    default_reward,
    make,
    make_vec,
    parse_action,
)

__all__ = ["make", "make_vec", "SregymEnv", "SregymVectorEnv", "ToolCall", "parse_action", "InvalidAction",
           "EpisodeOver", "default_reward", "TOOL_HELP", "POLICY_AGENT"]
