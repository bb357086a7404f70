"""The host CPU stall measure the functional SLO oracle consults (sregym_core.conductor.hostload)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from sregym_core.conductor.hostload import PSI_CPU, CpuPressureLog, read_cpu_stall_us


def psi_file(tmp_path, total):
    path = tmp_path / "cpu"
    path.write_text(f"some avg10=1.00 avg60=2.00 avg300=3.00 total={total}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    return path


def test_reads_the_some_lines_cumulative_total(tmp_path):
    assert read_cpu_stall_us(psi_file(tmp_path, 12345)) == 12345
    assert read_cpu_stall_us(tmp_path / "absent") is None
    (tmp_path / "garbled").write_text("some avg10=x\n")
    assert read_cpu_stall_us(tmp_path / "garbled") is None


def test_stall_fraction_between_marks(tmp_path):
    clock = [100.0]
    log = CpuPressureLog(path=psi_file(tmp_path, 0), clock=lambda: clock[0])
    log.mark()
    clock[0] = 130.0
    psi_file(tmp_path, 24_000_000)  # 24 s of the 30 s stalled
    assert log.stall_fraction(since=100.0) == 0.8
    # a window opening later than every reading but the last still uses the latest earlier reading
    clock[0] = 140.0
    psi_file(tmp_path, 34_000_000)
    assert log.stall_fraction(since=110.0) == 0.85  # from the t=100 reading: 34 s of 40 s
    assert log.stall_fraction(since=130.0) == 1.0  # from the t=130 reading: 10 s of 10 s


def test_no_psi_means_unknown(tmp_path):
    log = CpuPressureLog(path=tmp_path / "absent")
    log.mark()
    assert log.stall_fraction(since=0.0) is None


def test_too_short_a_span_is_unknown(tmp_path):
    clock = [5.0]
    log = CpuPressureLog(path=psi_file(tmp_path, 0), clock=lambda: clock[0])
    log.mark()
    clock[0] = 5.5
    assert log.stall_fraction(since=5.0) is None


@pytest.mark.skipif(read_cpu_stall_us() is None, reason="this kernel has no /proc/pressure/cpu")
def test_real_burners_starve_the_host_and_idle_does_not():
    """Real processes on the real counter: four times as many spinning processes as CPUs keep
    runnable tasks waiting nearly all the time; a sleeping host does not."""
    log = CpuPressureLog(path=PSI_CPU)
    log.mark()
    start = time.monotonic()
    burners = [subprocess.Popen([sys.executable, "-c", "import time\nend=time.monotonic()+3\nwhile time.monotonic()<end: pass"])
               for _ in range(4 * (os.cpu_count() or 1))]
    try:
        for proc in burners:
            proc.wait(timeout=30)
    finally:
        for proc in burners:
            proc.kill()
    busy = log.stall_fraction(since=start)
    assert busy is not None and busy >= 0.5, busy


class FakeHost:
    """A clock that sleep() advances, and a PSI file whose stall grows at ``stall`` per second."""

    def __init__(self, tmp_path, stall):
        self.now, self.total, self.stall, self.tmp_path = 0.0, 0, stall, tmp_path
        self.path = psi_file(tmp_path, 0)

    def sleep(self, seconds):
        self.now += seconds
        self.total += int(seconds * self.stall * 1e6)
        psi_file(self.tmp_path, self.total)

    def log(self):
        return CpuPressureLog(path=self.path, clock=lambda: self.now)


def test_a_service_level_wait_gets_extra_time_only_while_the_host_is_starved(tmp_path):
    from sregym_core.testing.slo import wait_for_service_level

    for stall, passes_at, expect in ((0.1, 200.0, None), (0.9, 200.0, "ok"), (0.9, 10_000.0, None)):
        host = FakeHost(tmp_path, stall)
        calls = []

        def predicate():
            calls.append(host.now)
            return "ok" if host.now >= passes_at else None

        got = wait_for_service_level(predicate, 150, 5, window_s=90, starved_patience=180,
                                     pressure=host.log(), sleep=host.sleep)
        assert got == expect, (stall, passes_at)
        if stall < 0.5:
            assert calls[-1] == 150.0  # not starved: the plain timeout, no extra time
        elif expect is None:
            assert calls[-1] == 330.0  # starved throughout: bounded by timeout + patience, never a pass
        else:
            assert calls[-1] == 200.0  # the first passing poll is returned


def test_a_service_level_wait_without_psi_is_a_plain_wait(tmp_path):
    from sregym_core.testing.slo import wait_for_service_level

    host = FakeHost(tmp_path, 1.0)
    log = CpuPressureLog(path=tmp_path / "no-psi", clock=lambda: host.now)
    calls = []
    assert wait_for_service_level(lambda: calls.append(host.now), 60, 5, window_s=30,
                                  pressure=log, sleep=host.sleep) is None
    assert calls[-1] == 60.0


def test_a_bounded_measurement_is_taken_again_only_when_the_host_was_starved(tmp_path):
    from sregym_core.testing.slo import measure_service_level

    for stall, good_from, expect_taken, expect_last in ((0.1, 2, 1, 0.9), (0.9, 2, 2, 1.0), (0.9, 99, 3, 0.9)):
        host = FakeHost(tmp_path, stall)
        count = []

        def measure():
            host.sleep(30)  # a 30 s workload
            count.append(1)
            return 1.0 if len(count) >= good_from else 0.9

        taken = measure_service_level(measure, lambda rate: rate >= 0.99, attempts=3, pressure=host.log())
        assert len(taken) == expect_taken, stall  # idle host: one; starved: again, at most 3 in all
        assert taken[-1] == expect_last


def test_a_bounded_measurement_without_psi_is_taken_once(tmp_path):
    from sregym_core.testing.slo import measure_service_level

    host = FakeHost(tmp_path, 1.0)
    log = CpuPressureLog(path=tmp_path / "no-psi", clock=lambda: host.now)
    assert measure_service_level(lambda: host.sleep(30) or 0.5, lambda rate: rate >= 0.99, pressure=log) == [0.5]
