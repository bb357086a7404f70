"""FleetCast's load generator: users browsing the catalogue, asking where a satellite is, and
ground stations reporting observations. Every answer is checked against the seeded catalogue
(:mod:`catalog`): a 200 with the wrong elements or position counts as wrong content."""

from __future__ import annotations

import json
import random
from typing import Any

from sregym_appkit import workload
from sregym_appkit.workload import Outcome, parse_settings

from .catalog import BY_ID, CATALOG_VERSION, EPOCH, SIZE, position
from .topology import API, API_PORT, NAMESPACE

MIX = (("home", 0.1), ("list", 0.15), ("satellite", 0.3), ("position", 0.3), ("observe", 0.15))
IDS = sorted(BY_ID)


class FleetCastGenerator(workload.Generator):
    endpoints = tuple(name for name, _ in MIX)
    metrics_prefix = "fleetcast_"

    def choose(self, rng: random.Random) -> str:
        return workload.choose_weighted(MIX, rng)

    def prepare(self, endpoint: str, rng: random.Random) -> Any:
        norad = rng.choice(IDS)
        if endpoint == "position":
            return norad, EPOCH + rng.randrange(0, 30 * 86400)
        if endpoint == "observe":
            return norad, f"gs-{rng.randrange(1, 20):02d}", round(rng.uniform(5, 90), 2)
        return norad

    async def _get(self, path: str) -> tuple[int, bytes]:
        assert self.session is not None
        async with self.session.get(self.settings.target + path) as resp:
            return resp.status, await resp.read()

    async def send(self, endpoint: str, request: Any) -> Outcome:
        try:
            status, wrong = await self._send(endpoint, request)
        except (OSError, TimeoutError, ValueError) as exc:
            return Outcome(0, error=f"{type(exc).__name__}: {exc}"[:200])
        except Exception as exc:  # noqa: BLE001 - aiohttp's client errors: a failed request, recorded as such
            return Outcome(0, error=f"{type(exc).__name__}: {exc}"[:200])
        return Outcome(status, wrong=wrong if 200 <= status < 300 else "",
                       error="" if 200 <= status < 300 else f"HTTP {status}")

    async def _send(self, endpoint: str, request: Any) -> tuple[int, str]:
        if endpoint == "home":
            status, body = await self._get("/")
            return status, "" if f"{SIZE} satellites tracked".encode() in body else "home_wrong_count"
        if endpoint == "list":
            status, body = await self._get("/api/satellites")
            if status != 200:
                return status, ""
            got = {s["norad"]: s["name"] for s in json.loads(body).get("satellites", [])}
            return status, "" if got == {n: s["name"] for n, s in BY_ID.items()} else "list_wrong_content"
        if endpoint == "satellite":
            status, body = await self._get(f"/api/satellites/{request}")
            if status != 200:
                return status, ""
            got, want = json.loads(body), BY_ID[request]
            same = got.get("name") == want["name"] and abs(float(got.get("inclination", -1)) - want["inclination"]) < 1e-6
            return status, "" if same else "satellite_wrong_elements"
        if endpoint == "position":
            norad, t = request
            status, body = await self._get(f"/api/satellites/{norad}/position?t={t}")
            if status != 200:
                return status, ""
            got, want = json.loads(body), position(BY_ID[norad], t)
            same = abs(got.get("lat", 999) - want["lat"]) < 1e-3 and abs(got.get("lon", 999) - want["lon"]) < 1e-3
            return status, "" if same else "position_wrong"
        norad, station, elevation = request
        assert self.session is not None
        async with self.session.post(self.settings.target + "/api/observations",
                                     json={"norad": norad, "station": station, "elevation": elevation}) as resp:
            status, body = resp.status, await resp.read()
        if status != 201:
            return status, ""
        obs_id = json.loads(body).get("id")
        status, body = await self._get(f"/api/observations/{obs_id}")
        if status != 200:
            return status, ""
        got = json.loads(body)
        same = got.get("norad") == norad and got.get("station") == station and got.get("elevation") == elevation
        return 201, "" if same else "observation_lost"


DEFAULT_TARGET = f"http://{API}.{NAMESPACE}.svc.cluster.local:{API_PORT}"
main = workload.main(lambda argv: FleetCastGenerator(parse_settings(
    argv, description=f"FleetCast's workload generator ({CATALOG_VERSION})", default_target=DEFAULT_TARGET)))
