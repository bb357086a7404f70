"""A live progress display for ``sregym run`` and ``sregym validate``.

The runner reports what it does as short lines (``run_sync(..., progress=callback)``). On a
terminal, :class:`RunProgress` keeps one status line at the bottom, redrawn every second:
attempts done of the total, what is happening now (bringing the cluster up, deploying, which
attempt is running and for how long, or in which stage when the runner reports
``<problem> × <agent> #<n>: stage <name>``, resetting the app), passes so far and an ETA from the
average time an attempt has taken. Outcomes and warnings still scroll above it as lines. When
stderr is not a terminal (CI, a pipe, a log file) nothing is redrawn: every line is printed as
it comes, as before.

.. versionadded:: 0.2
"""

from __future__ import annotations

import re
import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

_ATTEMPT = re.compile(r"^(?P<problem>.+?) \u00d7 (?P<agent>.+?) #(?P<number>\d+): (?P<rest>.*)$")
_CLEAR = "\r\x1b[K"


def _clock(seconds: float) -> str:
    seconds = max(int(round(seconds)), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class RunProgress:
    """The ``progress`` callback of a run: a status line on a terminal, plain lines elsewhere.

    :param total: attempts the run will make (problems × agents × attempts).
    :param per_problem: attempts per problem (agents × attempts): a problem whose deploy fails
        ends that many at once.
    :param stream: where to write (stderr by default); ``interactive`` overrides the terminal check.
    """

    def __init__(self, total: int, *, per_problem: int = 1, stream: TextIO | None = None,
                 interactive: bool | None = None, clock: Callable[[], float] = time.monotonic,
                 tick: float | None = 1.0) -> None:
        self.total, self.per_problem = max(total, 0), max(per_problem, 1)
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.interactive = bool(isatty and isatty()) if interactive is None else interactive
        self.clock = clock
        self.done = self.skipped = self.passed = 0
        self.activity = "starting"
        self.activity_since = clock()
        self.first_start: float | None = None
        self.timed = 0  # attempts that ran (not skipped), for the ETA
        self.last_done: float | None = None
        self._lock = threading.Lock()
        self._shown = False
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.interactive and tick:
            self._ticker = threading.Thread(target=self._tick, args=(tick,), name="sregym-progress", daemon=True)
            self._ticker.start()

    # ------------------------------------------------------------------ the callback

    def __call__(self, line: str) -> None:
        with self._lock:
            permanent = self._update(line)
            if not self.interactive:
                self._write(f"\u2022 {line}\n")
                return
            if permanent:
                self._write(_CLEAR + f"\u2022 {line}\n")
                self._shown = False
            self._draw()

    def _update(self, line: str) -> bool:
        """Fold one runner line into the state; True when the line should stay on screen."""
        now = self.clock()
        match = _ATTEMPT.match(line)
        if match:
            what = f"{match['problem']} \u00d7 {match['agent']} #{match['number']}"
            rest = match["rest"]
            if rest == "running":
                if self.first_start is None:
                    self.first_start = now
                self._activity(f"{what}: running", now)
                return False
            if rest.startswith("stage "):  # "<problem> × <agent> #<n>: stage mitigation", if the runner says so
                self._activity(f"{what}: {rest[len('stage '):]}", now)
                return False
            if "already recorded" in rest:
                self.done += 1
                self.skipped += 1
                return False
            if rest.startswith("diagnosis "):
                self.done += 1
                self.timed += 1
                self.last_done = now
                self.passed += "PASS" in rest and "FAIL" not in rest  # a stage not run neither passes nor fails
                self._activity(f"{match['problem']}: resetting the app", now)
                return True
            return True
        if line.startswith("cluster:"):
            self._activity(line, now)
            return True
        problem, _, rest = line.partition(": ")
        if rest.startswith("deploying"):
            self._activity(f"{problem}: deploying", now)
            return True
        if rest.startswith("deploy failed"):
            self.done += self.per_problem
            return True
        if rest.startswith("skipped"):  # the cluster lacks a capability the problem's faults need
            self.done += self.per_problem
            self.skipped += self.per_problem
            return True
        if "redeploying" in rest:
            self._activity(f"{problem}: redeploying the app", now)
        return True

    def _activity(self, text: str, now: float) -> None:
        self.activity, self.activity_since = text, now

    # ------------------------------------------------------------------ the status line

    def eta(self) -> float | None:
        """Seconds left: the mean time per attempt so far (resets included) times what remains,
        less the time the current attempt has already run (never less than the attempts after it)."""
        if not self.timed or self.first_start is None or self.last_done is None:
            return None
        per_attempt = (self.last_done - self.first_start) / self.timed
        remaining = max(self.total - self.done, 0)
        return max(per_attempt * remaining - (self.clock() - self.last_done), per_attempt * max(remaining - 1, 0))

    def status(self) -> str:
        done = min(self.done, self.total) if self.total else self.done
        percent = f" {done * 100 // self.total}%" if self.total else ""
        parts = [f"[{done}/{self.total}{percent}] {self.activity} {_clock(self.clock() - self.activity_since)}"]
        remaining = max(self.total - self.done, 0)
        parts.append(f"{remaining} left")
        if self.timed:
            parts.append(f"{self.passed}/{self.timed} passed")
        eta = self.eta()
        parts.append(f"ETA {_clock(eta)}" if eta is not None else "ETA -")
        return " \u00b7 ".join(parts)

    def _draw(self) -> None:
        width = shutil.get_terminal_size((100, 24)).columns
        text = self.status()
        if len(text) >= width:
            text = text[: max(width - 2, 10)] + "\u2026"
        # the cursor goes back to the start, so a log line printed meanwhile overwrites the status
        self._write(_CLEAR + text + "\r")
        self._shown = True

    def _tick(self, every: float) -> None:
        while not self._stop.wait(every):
            with self._lock:
                if self._shown:
                    self._draw()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed terminal must not end the run
            pass

    def close(self) -> None:
        """Stop redrawing and leave the terminal on a clean line."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        with self._lock:
            if self.interactive and self._shown:
                self._write(_CLEAR)
                self._shown = False

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
