"""The inject and recover times of the disk and syscall faults on Hotel Reservation (issue #36: "inject and recover
each take under 2 s"), as a pytest module that ``benchmarks/bench_disk_faults.py`` runs and summarises.

Not part of the landing suite (not a ``test_*`` file): it times, it asserts nothing about time. Each round injects the
curated problem's fault through its own function on the deployed app, as the conductor does, recovers it, and resets
the app to its baseline.
"""

from __future__ import annotations

import os
import time

import pytest

from sregym_core.faults import call_fault
from sregym_core.validation import validate

pytestmark = [pytest.mark.slow]

PROBLEMS = ("hotel-latent-sector-error-postgres-user", "hotel-disk-bad-blocks-postgres-geo",
            "hotel-silent-data-corruption-postgres-recommendation", "hotel-syscall-fail-fsync-postgres-reservation")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))


@pytest.fixture(scope="module")
def hotel(deployed_app):
    return deployed_app("hotel-reservation")


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_cycle(hotel, problem_id):
    problem = hotel.host.get_problems()[problem_id]
    for instance in problem.faults:
        spec = hotel.host.get_faults()[instance.fault]
        target = hotel.app.target(instance.target)
        params = validate(dict(instance.params), dict(spec.params_schema), what=f"params of {spec.name}",
                          fill_defaults=True)
        for _round in range(ROUNDS):
            ctx = hotel.context()
            started = time.monotonic()
            hotel.run(call_fault(spec.impl.inject, ctx, target, params))
            injected = time.monotonic()
            hotel.run(call_fault(spec.impl.recover, ctx, target, params))
            recovered = time.monotonic()
            mechanism = ctx.state.get("fault_mechanism", "?")
            print(f"TIMING {problem_id} {spec.name} {mechanism} inject={injected - started:.2f} "
                  f"recover={recovered - injected:.2f}")
            hotel.reset()
