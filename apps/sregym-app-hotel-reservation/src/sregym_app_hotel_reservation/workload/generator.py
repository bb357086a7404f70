"""Hotel Reservation's workload generator (``python -m sregym_app_hotel_reservation.serve workload``).

The open-loop engine and its ``/stats`` + ``/control`` API are sregym_appkit.workload; this module
adds the request mix (``mix.py``) and the content check (``content.py``): every answer is checked
against the seeded data, so a success is the expected status *with* the right content, and an answer
whose status looks fine but whose content is wrong is a failure counted separately as a content error.
"""

from __future__ import annotations

import random

from sregym_appkit import workload
from sregym_appkit.workload import Outcome, Settings, parse_settings, validate_run

from . import content
from .mix import ENDPOINTS, choose, request_for

__all__ = ["ENDPOINTS", "HotelGenerator", "main", "validate_run"]


class HotelGenerator(workload.Generator):
    """Searches, recommendations, logins (half with a wrong password) and reservations at the frontend."""

    endpoints = ENDPOINTS

    def choose(self, rng: random.Random) -> str:
        return choose(rng)

    def prepare(self, endpoint: str, rng: random.Random) -> tuple[str, str]:
        return request_for(endpoint, rng)

    async def send(self, endpoint: str, request: tuple[str, str]) -> Outcome:
        assert self.session is not None
        method, path = request
        async with self.session.request(method, self.settings.target + path) as resp:
            body = await resp.read()
        status = resp.status
        # a refused login (401 for a wrong password) is the expected answer, judged on content too
        if 200 <= status < 300 or status == content.expected_status(endpoint, content.query_params(path)):
            wrong = content.check(endpoint, path, status, body) or ""
            return Outcome(status, wrong=wrong, ok=not wrong)
        return Outcome(status, ok=False)


def build(argv: list[str]) -> HotelGenerator:
    settings: Settings = parse_settings(argv, description="Hotel Reservation workload generator",
                                        default_target="http://frontend.hotel-reservation.svc.cluster.local:5000")
    return HotelGenerator(settings)


main = workload.main(build)
