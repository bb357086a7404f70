"""The submission protocol of an attempt, answering exactly as upstream SREGym's conductor API does.

Stages run ``setup → diagnosis → mitigation → tearing_down → done`` (a problem may select only
one of the two graded stages). A submission is graded *while its stage is still current*: the
stage advances only when grading ends, so a client polling ``/status`` sees ``diagnosis`` until
the judge has answered and ``mitigation`` until the oracle has. A second submission for a stage
that is being graded is absorbed (``200 Submission received``, with ``graded: false``); grading is
done by one evaluator at a time, and a submission that finds it busy with an earlier stage waits
up to ``busy_wait_s`` and then gets ``503``.

Answers (status, body), from the facts in upstream-parity.md §2.1 (rows H4-H12):

===========================  ===================================================================
situation                    answer
===========================  ===================================================================
accepted                     200 ``{"status": "200", "message": "Submission received"}``
absorbed (stage under grading) 200 the same, plus ``"graded": false`` and a ``detail`` (this project's)
duplicate of the last graded 200 ``{"status": "duplicate", "message": "..."}`` (this project's guard)
stage ``done``               200 ``{"status": "done", "message": "All stages have been completed and graded..."}``
stage setup / tearing_down   400 ``{"detail": "Cannot submit at stage: '<stage>'"}``
evaluator busy               503 ``{"detail": "Previous stage is still being evaluated..."}``
grading could not start      400 ``{"detail": "Grading error: <why>"}``
no problem yet               400 ``{"detail": "No problem has been started"}``
===========================  ===================================================================

A copy of a graded submission (the same text, arriving while it is graded or at most
``duplicate_window_s`` after that grading ended: a client's retry, or one answer sent over HTTP and
MCP) is answered as a duplicate and never taken for the next stage: graded on the unfixed system, it
would end the attempt. A client that read the new stage (``GET /status``) before sending the same
text meant it for that stage (upstream's ``autosubmit`` does so): that submission is taken. The
conductor's own waiter (external-harness mode) polls ``GET /status`` too; it sends
:data:`WAITER_HEADER`, and its reads tell the desk nothing (they once let a late MCP copy of the
diagnosis through as the mitigation, issue #34).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

log = structlog.get_logger()

STAGES = ("setup", "diagnosis", "mitigation", "tearing_down", "done")
GRADED_STAGES = ("diagnosis", "mitigation")

RECEIVED = {"status": "200", "message": "Submission received"}
ALL_DONE = {"status": "done", "message": "All stages have been completed and graded. No further submissions are needed."}
NO_PROBLEM = {"detail": "No problem has been started"}
BUSY = {"detail": "Previous stage is still being evaluated. Please retry shortly."}
#: how long after a stage's grading an identical submission counts as a copy of it
DUPLICATE_WINDOW_S = 10.0
#: sent by the conductor's own ``GET /status`` pollers: their reads are not a client's (see above)
WAITER_HEADER = "X-SREGym-Waiter"

Grader = Callable[[str], Awaitable[Any]]


def check_stages(stages: Sequence[str]) -> tuple[str, ...]:
    """A stage selection in protocol order; at least one of ``diagnosis``/``mitigation``."""
    chosen = tuple(s for s in GRADED_STAGES if s in stages)
    unknown = [s for s in stages if s not in GRADED_STAGES]
    if unknown or not chosen:
        raise ValueError(f"stages must be a non-empty subset of {list(GRADED_STAGES)}, got {list(stages)}")
    return chosen


class StageDesk:
    """Takes submissions for one attempt and runs their grading, one stage at a time.

    :param graders: ``{"diagnosis": judge, "mitigation": oracle}`` coroutine functions taking the
        submitted text; their results are kept in :attr:`verdicts` (an exception is kept too).
    :param stages: the graded stages of this problem, in order.
    :param busy_wait_s: how long a submission waits for a busy evaluator before the 503.
    """

    def __init__(self, graders: dict[str, Grader], *, stages: Sequence[str] = GRADED_STAGES,
                 busy_wait_s: float = 60.0, busy_poll_s: float = 1.0,
                 duplicate_window_s: float = DUPLICATE_WINDOW_S) -> None:
        self.graders = graders
        self.stages = check_stages(stages)
        self.busy_wait_s, self.busy_poll_s = busy_wait_s, busy_poll_s
        self.duplicate_window_s = duplicate_window_s
        self.duplicates = 0  # copies answered as duplicates (for the record)
        self.absorbed: list[dict[str, str]] = []  # other texts that arrived while their stage was graded
        self.reported: set[str] = set()  # stages a client has read as current (GET /status)
        self.stage = "setup"
        self.submissions: dict[str, str] = {}
        self.submitted_at: dict[str, float] = {}
        self.graded_at: dict[str, float] = {}
        self.verdicts: dict[str, Any] = {}
        self.tasks: dict[str, asyncio.Task] = {}
        self.evaluator = asyncio.Lock()
        self.finished = asyncio.Event()  # every selected stage was graded (or the attempt ended)

    # -- stage control by the conductor ------------------------------------------------------------

    def open(self) -> None:
        """Injection is done: the first selected stage starts."""
        self.stage = self.stages[0]

    def close(self) -> None:
        """The agent's time is over (or it finished): no more submissions are graded."""
        if self.stage not in ("tearing_down", "done"):
            self.stage = "tearing_down"
        self.finished.set()

    def done(self) -> None:
        self.stage = "done"
        self.finished.set()

    # -- the agent's side --------------------------------------------------------------------------

    def report_stage(self) -> str:
        """The current stage, as ``GET /status`` tells a client (who then knows it changed)."""
        self.reported.add(self.stage)
        return self.stage

    async def submit(self, solution: str) -> tuple[int, dict[str, Any]]:
        stage = self.stage
        if stage == "done":
            return 200, dict(ALL_DONE)
        if stage not in GRADED_STAGES:
            return 400, {"detail": f"Cannot submit at stage: {stage!r}"}
        if stage in self.submissions:  # the same stage again while it is graded
            return self._while_graded(stage, solution)
        copied = self._copy_of(solution)
        if copied is not None:
            return 200, self._duplicate(copied)
        deadline = time.monotonic() + self.busy_wait_s
        while self.evaluator.locked():
            if time.monotonic() >= deadline:
                return 503, dict(BUSY)
            await asyncio.sleep(self.busy_poll_s)
            if self.stage != stage:  # the stage moved on while waiting: answer for the new one
                return await self.submit(solution)
        if stage in self.submissions:
            return self._while_graded(stage, solution)
        copied = self._copy_of(solution)  # the earlier stage's grading ended while this one waited
        if copied is not None:
            return 200, self._duplicate(copied)
        grader = self.graders.get(stage)
        if grader is None:
            return 400, {"detail": f"Grading error: no grader for stage {stage!r}"}
        self.submissions[stage] = solution
        self.submitted_at[stage] = time.monotonic()
        try:
            self.tasks[stage] = asyncio.get_running_loop().create_task(self._grade(stage, grader, solution))
        except Exception as exc:  # nothing graded: the submission is not kept
            self.submissions.pop(stage, None)
            self.submitted_at.pop(stage, None)
            return 400, {"detail": f"Grading error: {exc}"}
        log.info("submission_received", stage=stage, chars=len(solution))
        return 200, dict(RECEIVED)

    def _while_graded(self, stage: str, solution: str) -> tuple[int, dict[str, Any]]:
        """A submission for the stage under grading: a copy of the graded text is a duplicate; any
        other text is absorbed: upstream answers it ``Submission received`` and grades nothing. The
        answer keeps upstream's two keys (clients read ``status``) and says, in ``graded: false`` and
        ``detail``, that this text is not graded (red-team round 7: the same answer as a graded one
        told the agent nothing); the attempt's record keeps the absorbed texts."""
        if self.submissions[stage].strip() == solution.strip():
            return 200, self._duplicate(stage)
        log.info("submission_absorbed", stage=stage)
        self.absorbed.append({"stage": stage, "solution": solution[:2000]})
        return 200, {**RECEIVED, "graded": False,
                     "detail": f"The {stage} submission received before this one is being graded; this one is "
                               f"not graded."}

    def _copy_of(self, solution: str) -> str | None:
        """The earlier stage whose graded submission ``solution`` repeats within the window, or None."""
        if self.stage in self.reported:  # the client saw the new stage: the same text is meant for it
            return None
        now = time.monotonic()
        for stage, text in self.submissions.items():
            graded = self.graded_at.get(stage)
            if stage != self.stage and text.strip() == solution.strip() and \
                    (graded is None or now - graded <= self.duplicate_window_s):
                return stage
        return None

    def _duplicate(self, stage: str) -> dict[str, Any]:
        self.duplicates += 1
        log.info("submission_duplicate", stage=self.stage, copy_of=stage)
        when = "being graded" if stage not in self.graded_at else "graded just before"
        return {"status": "duplicate",
                "message": f"Identical to the {stage} submission {when}; ignored. The current stage "
                           f"{self.stage!r} is unchanged: submit its own answer."}

    async def _grade(self, stage: str, grader: Grader, solution: str) -> None:
        async with self.evaluator:
            try:
                self.verdicts[stage] = await grader(solution)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # kept as the stage's verdict; the attempt records it
                log.warning("grading_failed", stage=stage, error=f"{type(exc).__name__}: {exc}")
                self.verdicts[stage] = exc
            self.graded_at[stage] = time.monotonic()
            if self.stage == stage:
                self._advance(stage)

    def _advance(self, stage: str) -> None:
        later = self.stages[self.stages.index(stage) + 1:]
        if later:
            self.stage = later[0]
        else:
            self.stage = "tearing_down"
            self.finished.set()

    async def wait_graded(self) -> None:
        """Wait for every grading that was started."""
        for task in list(self.tasks.values()):
            try:
                await task
            except asyncio.CancelledError:
                raise
            except Exception:  # recorded in verdicts by _grade
                pass

    async def cancel(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        for task in self.tasks.values():
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
