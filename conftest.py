"""Root conftest: enables the SREGym pytest harness for every test directory in the repo and shapes the
landing suite (docs/ci.md).

* Tests marked ``matrix`` (exhaustive live matrices) are skipped unless ``--matrix`` or
  ``SREGYM_MATRIX=1``.
* Tests marked ``validation`` grade service levels or soundness on the machine they run on; they are
  skipped unless ``--validation`` or ``SREGYM_VALIDATION=1`` (``tools/validate-sample.sh`` runs them).
  The landing suite asserts behaviour, never a rate, latency or duration measured on a shared machine.
* Under pytest-xdist with ``--dist loadfile`` (./test.sh), every test file that runs an application
  on the worker's session cluster goes to a unit of work, a *live lane*, which one worker runs file after
  file. With two workers (./test.sh's default) there is one lane, and each file that starts a cluster of
  its own (marker ``apps``) is a unit of its own that the other worker takes first, so for a few minutes
  two clusters with apps run at once. With three or more there are two lanes: the first holds the files
  that share the session cluster and its Hotel Reservation deploy, the second the files with clusters of
  their own and the session-cluster files marked ``second_lane`` (an app no first-lane file deploys, or a
  file moved there to balance the lanes). Every other file is a unit of its own, run beside the lane or
  lanes (beside two, at a lower CPU priority: they are the run's longest chains). (The lanes are a
  scheduler of ours, :class:`LiveLaneScheduling`: xdist's own ``loadgroup`` marks groups by rewriting a
  private nodeid attribute that pytest 9.2 no longer reads.)
* Property tests (Hypothesis) draw the same examples on every run (``derandomize``, no example
  database): a landing check must not fail on an example no earlier run drew. A bug a random search
  would find is looked for with ``SREGYM_HYPOTHESIS=explore`` (random examples, a database), and the
  example it finds becomes an ``@example`` of the test.
"""

import json
import os
import time
import uuid

import pytest

pytest_plugins = ["sregym_core.testing"]

try:  # before any test module builds its settings from the default profile
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("landing", derandomize=True, database=None)
    _hypothesis_settings.register_profile("explore", derandomize=False)
    _hypothesis_settings.load_profile("explore" if os.environ.get("SREGYM_HYPOTHESIS") == "explore" else "landing")
except ImportError:  # hypothesis comes with the test extras
    pass

#: the scheduler's units of work holding the files that run an app on a cluster (one worker each, file after
#: file): the session cluster's files, and the files with clusters or apps of their own
LIVE_LANE = "live-apps"
SECOND_LANE = "live-apps-2"
#: how much less CPU priority a worker takes once it runs files beside two lanes (os.nice: raising it needs
#: no privilege, and a worker never goes back to a lane: lanes are the first units handed out)
NICE_BESIDE_THE_LANES = 5
#: the app template's own tests run on a renamed, installed copy of it (tests/test_app_template.py); in
#: the checkout, where the template is not installed, they could only skip
collect_ignore_glob = ["apps/_template/*"]
#: fixtures through which a test gets a cluster with apps (the session's shared cluster)
LIVE_FIXTURES = {"embedded_cluster", "shared_cluster", "deployed_app"}


#: the functional-SLO window of the attempts landing tests run (``sregym run --oracle-window``, the RL
#: API): the landing suite grades no service level (docs/ci.md), the window only has to see the
#: content of a few answers; validation runs (``--validation``) keep every problem's own window
LANDING_ORACLE_WINDOW_S = "5"
#: and the graces before grading (the mitigation's 2 s, the clients' 3 s to reconnect) capped: they keep a
#: service level from counting the seconds after a fix, which no landing test grades (SREGYM_GRADING_GRACE)
LANDING_GRADING_GRACE_S = "0.5"


def pytest_configure(config: pytest.Config) -> None:
    if not (config.getoption("--validation") or os.environ.get("SREGYM_VALIDATION") == "1"):
        os.environ.setdefault("SREGYM_ORACLE_WINDOW", LANDING_ORACLE_WINDOW_S)
        os.environ.setdefault("SREGYM_GRADING_GRACE", LANDING_GRADING_GRACE_S)
    # Under pytest-xdist (./test.sh runs two workers), every worker gets its own SREGYM_HOME: its
    # session cluster and the clusters its tests start live apart from the other worker's, whose
    # names they share. Addresses stay distinct machine-wide (the embedded cluster's range registry).
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    base = os.environ.get("SREGYM_HOME") or os.path.join(os.path.expanduser("~"), ".sregym")
    if worker:
        os.environ["SREGYM_HOME"] = os.path.join(base, f"xdist-{worker}")
    elif getattr(config.option, "numprocesses", None):
        # the controller, before it starts the workers (they inherit these): where the running lane
        # test is named, and where the workers say which files are in the lane
        run = os.path.join(base, f"xdist-run-{uuid.uuid4().hex[:8]}")
        os.environ["SREGYM_TEST_LANE_DIR"] = os.path.join(run, "live-lanes")
        os.environ["SREGYM_TEST_LANE_FILES"] = os.path.join(run, "live-lane-files.json")


def pytest_unconfigure(config: pytest.Config) -> None:
    files = os.environ.get("SREGYM_TEST_LANE_FILES")
    if files and not os.environ.get("PYTEST_XDIST_WORKER"):
        import shutil

        shutil.rmtree(os.path.dirname(files), ignore_errors=True)  # the controller's own run directory


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--matrix", action="store_true", default=False,
                     help="also run the exhaustive live matrices (tests marked 'matrix'); see docs/validation.md")
    parser.addoption("--validation", action="store_true", default=False,
                     help="also run the validation tests (marker 'validation': service levels and soundness "
                          "graded on this machine); tools/validate-sample.sh runs them, docs/ci.md")


def in_live_lane(item: pytest.Item) -> bool:
    """Whether a test runs an application on an embedded cluster (its own or the session's)."""
    return item.get_closest_marker("apps") is not None or bool(LIVE_FIXTURES & set(getattr(item, "fixturenames", ())))


def own_cluster(item: pytest.Item) -> bool:
    """Whether a test runs an app on a cluster of its own (the ``apps`` marker) and never gets the session's."""
    return item.get_closest_marker("apps") is not None and not LIVE_FIXTURES & set(getattr(item, "fixturenames", ()))


def file_lanes(items: list[pytest.Item], workers: int) -> dict[str, str]:
    """The live lane of every file with a live test. With three workers or more, the first lane when one of its tests
    gets the session's cluster (a live fixture) and the file is not marked ``second_lane``, else the second. With two,
    one lane of the files on the session's cluster; a file with a cluster of its own is a unit of its own, which the
    other worker takes first (r68: the lane ran 2422 s and the other worker 1902 s, and the own-cluster files, ~400 s,
    were the lane's; beside it the other worker's share grows and the quick files even out the end). One worker runs
    every file in one process."""
    lanes: dict[str, str] = {}
    for item in items:
        if not in_live_lane(item):
            continue
        path = item.nodeid.split("::", 1)[0]
        own = item.get_closest_marker("apps") is not None or item.get_closest_marker("second_lane") is not None
        if workers < 3:
            if not own_cluster(item):
                lanes[path] = LIVE_LANE
        elif not own or lanes.get(path) == LIVE_LANE:
            lanes[path] = LIVE_LANE
        else:
            lanes[path] = SECOND_LANE
    # a file with one test on the session's cluster is in the lane whole, its own-cluster tests included
    return lanes


#: this worker's lanes by file (every worker collects the same tests and computes the same map)
_LANES: dict[str, str] = {}


def lane_of(item: pytest.Item) -> str | None:
    """The item's lane under xdist (where the worker computed the map); in one process every live test is in it."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return _LANES.get(item.nodeid.split("::", 1)[0])
    return LIVE_LANE if in_live_lane(item) else None


def _start_order(item: pytest.Item) -> int:
    if own_cluster(item):
        return 1  # beside the lane from the start (on two workers; in the second lane on three)
    if in_live_lane(item):
        return 0  # the live lanes are the longest chains of the run: they start first
    if item.get_closest_marker("heavy") is not None:
        return 2
    return 3 if item.get_closest_marker("slow") is not None else 4


def _publish_lane_files(lanes: dict[str, str]) -> None:
    """A worker tells the controller's scheduler which files are in which live lane (every worker
    collects the same tests and writes the same map; the scheduler reads it once collection is done)."""
    target = os.environ.get("SREGYM_TEST_LANE_FILES")
    if not target:
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    partial = f"{target}.{os.getpid()}"
    with open(partial, "w") as out:
        json.dump(lanes, out, sort_keys=True)
    os.replace(partial, target)


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadfile" or not os.environ.get("SREGYM_TEST_LANE_FILES"):
        return None
    from xdist.scheduler import LoadFileScheduling

    class LiveLaneScheduling(LoadFileScheduling):
        """Whole files per worker, except that each live lane's files are one unit of work (one worker,
        file after file, in collection order)."""

        _lanes: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._lanes is None:
                with open(os.environ["SREGYM_TEST_LANE_FILES"]) as f:  # written by every worker's collection
                    self._lanes = dict(json.load(f))
            path = nodeid.split("::", 1)[0]
            return self._lanes.get(path, path)

    return LiveLaneScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Workers take whole groups in collection order: the live lane first, then the files with a cluster
        # of their own, files with a test that takes minutes, slow ones, the quick ones last to fill the gaps. Every
        # worker sorts the same way; tests keep their order within a file.
        rank: dict[object, int] = {}
        for item in items:
            rank[item.path] = min(rank.get(item.path, 4), _start_order(item))
        items.sort(key=lambda item: rank[item.path])
        _LANES.clear()
        _LANES.update(file_lanes(items, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
        _publish_lane_files(_LANES)
    skip_matrix = not (config.getoption("--matrix") or os.environ.get("SREGYM_MATRIX") == "1")
    skip_validation = not (config.getoption("--validation") or os.environ.get("SREGYM_VALIDATION") == "1")
    matrix = pytest.mark.skip(reason="exhaustive live matrix: run with --matrix or SREGYM_MATRIX=1 (docs/validation.md)")
    validation = pytest.mark.skip(reason="validation test (a service level or soundness graded on this machine): "
                                         "tools/validate-sample.sh runs it (docs/ci.md)")
    for item in items:
        if skip_matrix and item.get_closest_marker("matrix") is not None:
            item.add_marker(matrix)
        if skip_validation and item.get_closest_marker("validation") is not None:
            item.add_marker(validation)


@pytest.fixture(autouse=True)
def _live_lane_holder(request: pytest.FixtureRequest):
    """While a live-lane test runs, its lane's file names it: a test that fails waiting for a cluster
    says which live tests held the machine's app clusters at that moment. With two lanes, a worker that runs a file
    beside them lowers its CPU priority first, for good (the lanes are handed out first). With one lane it does not:
    r67 (2026-12-01, two workers, the other worker at +5) gave the lane 1.3 cores and the other worker 0.46, which
    made the other worker's files the longer chain."""
    lane = lane_of(request.node)
    if lane is None:
        beside_two = SECOND_LANE in _LANES.values() and os.environ.get("PYTEST_XDIST_WORKER")
        if beside_two and os.nice(0) < NICE_BESIDE_THE_LANES:
            os.nice(NICE_BESIDE_THE_LANES - os.nice(0))
        yield
        return
    request.node.user_properties.append(("live_lane", lane))  # in the JUnit file: tools/suite_durations.py
    lanes = os.environ.get("SREGYM_TEST_LANE_DIR")
    if not lanes:
        yield
        return
    held = os.path.join(lanes, f"{lane}.json")
    os.makedirs(lanes, exist_ok=True)
    with open(held, "w") as out:
        json.dump({"test": request.node.nodeid, "pid": os.getpid(), "since": time.time()}, out)
    try:
        yield
    finally:
        try:
            os.remove(held)
        except FileNotFoundError:
            pass


def live_lane_holder() -> str | None:
    """The live-lane tests running now, and for how long, if any."""
    lanes = os.environ.get("SREGYM_TEST_LANE_DIR")
    found = []
    for lane in (LIVE_LANE, SECOND_LANE):
        try:
            with open(os.path.join(lanes or "", f"{lane}.json")) as f:
                held = json.load(f)
        except (OSError, ValueError):
            continue
        found.append(f"{held['test']} (pid {held['pid']}, for {time.time() - held['since']:.0f} s)")
    return "; ".join(found) or None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if report.failed and lane_of(item) is None:
        holder = live_lane_holder()
        if holder:
            report.sections.append(("live lane", f"when this test failed, the live lanes were held by {holder}"))
