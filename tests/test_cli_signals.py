"""`kill <pid>` stops a run as Ctrl-C does: the clean-up in finally blocks runs, the exit is 130."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

# a command that holds a resource until it is stopped, and releases it in a finally block (as a run
# stops its clusters, revokes its agent identities and shuts its Ray cluster down)
PROGRAM = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from sregym_core.cli import cli, main

    marker = Path(sys.argv[1])

    @cli.command("hold")
    def hold():
        marker.write_text("holding")
        try:
            time.sleep(120)
        finally:
            marker.write_text("released")

    main(["hold"])
""")


def test_sigterm_runs_the_clean_up_and_exits_130(tmp_path):
    marker = tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM, str(marker)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text() == "holding"):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert marker.read_text() == "released"
    assert "Interrupted." in err and "Traceback" not in err
