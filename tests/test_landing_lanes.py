"""The landing suite's mechanics (conftest.py, docs/ci.md), driven as ./test.sh drives them: a small
test tree under the repo's own root conftest, run by pytest-xdist with ``--dist loadfile``.

* every test that gets the session's app cluster (a ``deployed_app``/``shared_cluster``/``embedded_cluster``
  fixture) runs in one group, the first live lane, on one worker; with three workers the files with a cluster of
  their own (the ``apps`` marker) or an app of their own (``second_lane``) in the second lane, on another; with two,
  the files with a cluster of their own are units of their own, the other worker's first;
* other files stay whole, one group each, on workers that lowered their CPU priority;
* tests marked ``validation`` are skipped unless ``--validation``;
* a test that fails outside the lane while a lane test runs says which lane test held it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: a test that calls record(name) writes its worker's CPU priority into NICE_DIR/name
RECORD = '''
import os

def record(name):  # the worker's CPU priority when this test ran
    if 'NICE_DIR' in os.environ:
        with open(os.path.join(os.environ['NICE_DIR'], name), 'w') as out:
            out.write(str(os.nice(0)))
'''

LIVE = RECORD + '''
import time, pytest

@pytest.fixture
def deployed_app():
    return "app"

def test_a(deployed_app):
    record("a")
    time.sleep(0.2)

def test_b(deployed_app):
    time.sleep(0.2)
'''
LIVE_TOO = '''
import pytest

@pytest.fixture
def shared_cluster():
    return "cluster"

def test_f(shared_cluster):
    pass
'''
OWN_CLUSTER = RECORD + '''
import pytest
pytestmark = pytest.mark.apps

def test_c():
    record("c")
'''
OTHER_APP = '''
import pytest
pytestmark = pytest.mark.second_lane

@pytest.fixture
def deployed_app():
    return "another app"

def test_g(deployed_app):
    pass
'''
PLAIN = RECORD + '''
import pytest

def test_d():
    record("d")

def test_e():
    pass

@pytest.mark.validation
def test_graded_on_this_machine():
    pass
'''
WAITS_BESIDE_THE_LANE = '''
import os, time

def test_fails_while_the_lane_is_held():
    deadline = time.time() + 60
    lanes = os.environ["SREGYM_TEST_LANE_DIR"]
    while not (os.path.isdir(lanes) and os.listdir(lanes)) and time.time() < deadline:
        time.sleep(0.05)
    assert False, "a cluster did not start in time"
'''
SLOW_LIVE = '''
import time, pytest

@pytest.fixture
def shared_cluster():
    return "cluster"

def test_holds_the_lane(shared_cluster):
    time.sleep(3)
'''


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text(textwrap.dedent("""\
        [pytest]
        markers =
            apps: app cluster of its own
            second_lane: app of its own
            validation: graded on this machine
            matrix: exhaustive
            slow: slow
            heavy: heavy
        """))
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _pytest(where: Path, *args: str) -> subprocess.CompletedProcess:
    env_home = where / "home"
    env_home.mkdir(exist_ok=True)
    import os

    env = {**os.environ, "SREGYM_HOME": str(env_home), "NICE_DIR": str(where)}
    env.pop("SREGYM_TEST_LANE_DIR", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-rs", *args],
                          cwd=where, env=env, capture_output=True, text=True, timeout=300)


def test_app_tests_run_in_two_lanes_and_other_files_stay_whole_at_a_lower_priority(tmp_path):
    tree = _tree(tmp_path, {"test_live.py": LIVE, "test_live_too.py": LIVE_TOO,
                            "test_own_cluster.py": OWN_CLUSTER, "test_second_lane.py": OTHER_APP,
                            "test_plain.py": PLAIN})
    done = _pytest(tree, "-n", "3", "--dist", "loadfile", "--no-loadscope-reorder")
    assert done.returncode == 0, done.stdout[-3000:]
    workers: dict[str, str] = {}
    for worker, nodeid in re.findall(r"\[(gw\d)\] \[\s*\d+%\] \w+ (\S+)", done.stdout):
        workers[nodeid] = worker
    first = {workers[f"test_live.py::{t}"] for t in ("test_a", "test_b")} | {workers["test_live_too.py::test_f"]}
    second = {workers["test_own_cluster.py::test_c"], workers["test_second_lane.py::test_g"]}
    plain = {workers[f"test_plain.py::{t}"] for t in ("test_d", "test_e", "test_graded_on_this_machine")}
    # three groups for three workers: each lane whole on one, the plain file whole on the third
    assert len(first) == 1 and len(second) == 1 and len(plain) == 1, workers
    assert len(first | second | plain) == 3, workers
    base = os.nice(0)
    niceness = {name: int((tmp_path / name).read_text()) for name in ("a", "c", "d")}
    assert niceness == {"a": base, "c": base, "d": max(base, 5)}, niceness


def test_two_workers_keep_one_lane(tmp_path):
    tree = _tree(tmp_path, {"test_live.py": LIVE, "test_own_cluster.py": OWN_CLUSTER, "test_other_app.py": OTHER_APP,
                            "test_plain.py": PLAIN})
    done = _pytest(tree, "-n", "2", "--dist", "loadfile", "--no-loadscope-reorder")
    assert done.returncode == 0, done.stdout[-3000:]
    workers = {nodeid: worker for worker, nodeid in re.findall(r"\[(gw\d)\] \[\s*\d+%\] \w+ (\S+)", done.stdout)}
    lane = {workers["test_live.py::test_a"], workers["test_live.py::test_b"], workers["test_other_app.py::test_g"]}
    plain = {workers["test_plain.py::test_d"]}
    assert len(lane) == 1 and lane != plain, workers
    # a file with a cluster of its own is not in the lane: the other worker takes it first, beside the lane
    assert {workers["test_own_cluster.py::test_c"]} != lane, workers
    order = [nodeid for _worker, nodeid in re.findall(r"\[(gw\d)\] \[\s*\d+%\] \w+ (\S+)", done.stdout)]
    beside = [n for n in order if workers[n] not in lane]
    assert beside[0] == "test_own_cluster.py::test_c", beside
    # beside one lane the other worker keeps its priority (r67: at +5 its files became the longer chain)
    assert int((tmp_path / "d").read_text()) == os.nice(0)


def test_validation_tests_run_only_when_asked(tmp_path):
    tree = _tree(tmp_path, {"test_plain.py": PLAIN})
    quiet = _pytest(tree)
    assert "SKIPPED" in quiet.stdout and "tools/validate-sample.sh runs it" in quiet.stdout, quiet.stdout[-2000:]
    asked = _pytest(tree, "--validation")
    assert "test_graded_on_this_machine PASSED" in asked.stdout, asked.stdout[-2000:]


def test_a_failure_beside_the_lane_names_the_lane_test_that_held_it(tmp_path):
    tree = _tree(tmp_path, {"test_slow_live.py": SLOW_LIVE, "test_waits.py": WAITS_BESIDE_THE_LANE})
    done = _pytest(tree, "-n", "2", "--dist", "loadfile", "--no-loadscope-reorder")
    assert done.returncode == 1, done.stdout[-3000:]
    assert re.search(r"the live lanes were held by test_slow_live\.py::test_holds_the_lane \(pid \d+, for \d+ s\)",
                     done.stdout), done.stdout[-3000:]
