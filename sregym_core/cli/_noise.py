"""``--noise`` and ``--seed``, shared by ``sregym run`` and ``sregym validate``."""

from __future__ import annotations

import click


def noise_options(func):
    func = click.option("--seed", "noise_seed", type=int, default=0, show_default=True,
                        help="Seed of the noise schedule: the same seed plays the same kinds, targets and times.")(func)
    func = click.option("--noise", "noise", default="off", show_default=True, metavar="PROFILE",
                        help="Ambient noise while the agent works: off, light, upstream (2 at a time, 120 s each, "
                             "300 s cooldown), heavy, or a JSON/YAML profile file. Problems' own noise: entries "
                             "always play.")(func)
    return func


def check_noise(noise: str) -> str | None:
    """Fail early (before anything is deployed) on an unknown profile; ``off`` → None."""
    from ..conductor.noise import load_profile

    return None if load_profile(noise) is None else noise
