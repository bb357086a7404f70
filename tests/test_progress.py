"""The live progress display of long runs: a status line on a terminal, plain lines elsewhere."""

from __future__ import annotations

import io
import os
import time

from sregym_core.progress import RunProgress

RUN = [
    "cluster: bringing up sregym",
    "hotel-wrong-image-geo: deploying hotel-reservation (once per run)",
    "hotel-wrong-image-geo × reference #1: running",
    "hotel-wrong-image-geo × reference #1: diagnosis PASS, mitigation PASS (ok)",
    "hotel-wrong-image-geo × noop #1: running",
]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_not_a_terminal_prints_plain_lines():
    stream = io.StringIO()  # isatty() is False: a pipe, CI, a log file
    with RunProgress(4, stream=stream) as progress:
        assert not progress.interactive
        for line in RUN:
            progress(line)
    assert stream.getvalue() == "".join(f"\u2022 {line}\n" for line in RUN)  # as before: no redraws, no escapes


def test_terminal_status_line_counts_and_estimates():
    stream, clock = io.StringIO(), Clock()
    progress = RunProgress(4, per_problem=2, stream=stream, interactive=True, clock=clock, tick=None)
    progress(RUN[0])
    progress(RUN[1])
    clock.now += 20
    progress(RUN[2])
    clock.now += 5
    assert progress.status().startswith("[0/4 0%] hotel-wrong-image-geo × reference #1: running 0:05")
    assert "ETA -" in progress.status()  # nothing finished yet: no estimate
    clock.now += 25  # the attempt took 30 s
    progress(RUN[3])
    progress(RUN[4])
    clock.now += 10
    status = progress.status()
    assert status.startswith("[1/4 25%] hotel-wrong-image-geo × noop #1: running 0:10")
    assert "3 left" in status and "1/1 passed" in status
    assert "ETA 1:20" in status  # 30 s per attempt so far × 3 left, less the 10 s the current one has run
    clock.now += 100  # the current attempt overruns: the estimate keeps the two after it
    assert "ETA 1:00" in progress.status()
    out = stream.getvalue()
    # outcomes stay on screen as lines; "running" only updates the status line
    assert "\u2022 hotel-wrong-image-geo × reference #1: diagnosis PASS, mitigation PASS (ok)\n" in out
    assert "\u2022 hotel-wrong-image-geo × reference #1: running\n" not in out
    assert out.endswith("\r") and "\x1b[K[1/4 25%]" in out
    progress.close()
    assert stream.getvalue().endswith("\r\x1b[K")  # leaves a clean line


def test_deploy_failures_and_resumed_attempts_count_as_done():
    clock = Clock()
    progress = RunProgress(6, per_problem=3, stream=io.StringIO(), interactive=True, clock=clock, tick=None)
    progress("hotel-a: deploy failed: timed out")
    progress("hotel-b × reference #1: already recorded, skipped (--resume)")
    assert progress.done == 4 and "2 left" in progress.status() and "ETA -" in progress.status()
    progress.close()


def test_status_is_redrawn_while_an_attempt_runs_and_stops_on_close():
    stream = io.StringIO()
    progress = RunProgress(2, stream=stream, interactive=True, tick=0.05)
    progress("p × a #1: running")
    deadline = time.monotonic() + 30  # the bound only catches a ticker that stopped
    while stream.getvalue().count("[0/2 0%]") < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stream.getvalue().count("[0/2 0%]") >= 4  # redrawn by the ticker: the elapsed time moves without new lines
    progress.close()
    assert not progress._ticker.is_alive()
    settled = stream.getvalue()
    time.sleep(0.15)
    assert stream.getvalue() == settled


def test_a_real_terminal_is_detected():
    primary, secondary = os.openpty()
    try:
        with open(secondary, "w", closefd=False) as tty:
            progress = RunProgress(1, stream=tty, tick=None)
            assert progress.interactive
            progress("p × a #1: running")
            progress.close()
        assert b"[0/1 0%]" in os.read(primary, 4096)
    finally:
        os.close(primary)
        os.close(secondary)


def test_stage_changes_show_in_the_status_line():
    clock = Clock()
    progress = RunProgress(1, stream=io.StringIO(), interactive=True, clock=clock, tick=None)
    progress("p × a #1: running")
    clock.now += 4
    progress("p × a #1: stage mitigation")
    clock.now += 2
    assert progress.status().startswith("[0/1 0%] p × a #1: mitigation 0:02")
    assert "stage mitigation\n" not in progress.stream.getvalue()  # a status, not a line that scrolls
    progress.close()
