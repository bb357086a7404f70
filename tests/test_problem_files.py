"""Problem files shipped by plugins: a bad one disables only its own problem (a warning naming the
file, the JSON path and a hint; ``list-problems --all`` lists it as broken; running its id is a clear
error); ``--problem`` also takes a path to a problem file."""

from __future__ import annotations

import pytest
import sregym_noop.plugin

from sregym_core import hookimpl
from sregym_core.problems import load_problem_dir
from sregym_core.types import BrokenProblem, ProblemSpec

GOOD = """id: fake-noop-api
app: fake-app
summary: noop on the api
tags: [lite, smoke]
faults:
  - fault: noop
    target: api
"""
BAD = """id: fake-broken
app: fake-app
faults: "not a list"
"""


def _ship(tmp_path, register_plugin, fake_app):
    problems = tmp_path / "problems"
    problems.mkdir()
    (problems / "good.yaml").write_text(GOOD)
    (problems / "bad.yaml").write_text(BAD)

    class Shipper:
        @hookimpl
        def sregym_apps(self):
            return [fake_app]

        @hookimpl
        def sregym_problems(self):
            return load_problem_dir(problems)

    register_plugin(sregym_noop.plugin, name="noop")
    register_plugin(Shipper())
    return problems


def test_a_bad_file_costs_only_itself(tmp_path):
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "bad.yaml").write_text(BAD)
    loaded = load_problem_dir(tmp_path)
    assert [type(p) for p in loaded] == [BrokenProblem, ProblemSpec]
    assert loaded[0].source == tmp_path / "bad.yaml" and "$.faults" in loaded[0].error


def test_listing_reports_the_bad_file_and_lists_the_rest(tmp_path, register_plugin, fake_app, sregym_cli):
    problems = _ship(tmp_path, register_plugin, fake_app)
    outcome = sregym_cli("list-problems").assert_success()
    assert "fake-noop-api" in outcome.output
    assert str(problems / "bad.yaml") in outcome.stderr and "skipping" in outcome.stderr
    assert "fake-broken" not in outcome.output


def test_a_bad_file_no_longer_stops_a_run_of_the_rest(tmp_path, register_plugin, fake_app, plugin_host):
    from sregym_core.cli._select import select_problems

    problems = _ship(tmp_path, register_plugin, fake_app)
    said: list[str] = []
    chosen = select_problems(plugin_host, suite="lite", say=said.append)
    assert [p.id for p in chosen] == ["fake-noop-api"]
    [warning] = said
    assert "fake-broken" in warning and str(problems / "bad.yaml") in warning
    assert "at $.faults:" in warning and "hint:" in warning and "SREGYM_DISABLE_PLUGINS=" in warning


def test_running_a_broken_id_says_why(tmp_path, register_plugin, fake_app, sregym_cli):
    problems = _ship(tmp_path, register_plugin, fake_app)
    outcome = sregym_cli("run", "--problem", "fake-broken", "--agent", "echo").assert_failed()
    assert "fake-broken cannot run" in outcome.stderr and str(problems / "bad.yaml") in outcome.stderr
    assert "$.faults" in outcome.stderr and "hint:" in outcome.stderr
    assert "Traceback" not in outcome.stderr


def test_list_problems_all_shows_the_broken_one(tmp_path, register_plugin, fake_app, sregym_cli):
    import json

    problems = _ship(tmp_path, register_plugin, fake_app)
    outcome = sregym_cli("list-problems", "--all").assert_success()
    assert "fake-broken" in outcome.output and "BROKEN" in outcome.output and "1 broken" in outcome.output
    rows = json.loads(sregym_cli("list-problems", "--all", "--json").assert_success().output)
    assert {r["id"]: r["status"] for r in rows} == {"fake-noop-api": "ok", "fake-broken": "broken"}
    broken = next(r for r in rows if r["status"] == "broken")
    assert broken["source"] == str(problems / "bad.yaml") and "$.faults" in broken["error"]


def test_a_plugin_whose_problems_hook_fails_costs_only_its_problems(tmp_path, register_plugin, fake_app, sregym_cli):
    _ship(tmp_path, register_plugin, fake_app)

    class Failing:
        @hookimpl
        def sregym_problems(self):
            raise FileNotFoundError("problems/ is not packaged")

    register_plugin(Failing(), name="failing-shipper")
    outcome = sregym_cli("list-problems", "--all").assert_success()
    assert "fake-noop-api" in outcome.output
    assert "failing-shipper" in outcome.stderr and "problems/ is not packaged" in outcome.stderr


def test_problem_accepts_a_path(tmp_path, plugin_host, register_plugin, fake_app):
    from sregym_core.cli._select import select_problems

    register_plugin(sregym_noop.plugin, name="noop")

    class Apps:
        @hookimpl
        def sregym_apps(self):
            return [fake_app]

    register_plugin(Apps())
    path = tmp_path / "mine.yaml"
    path.write_text(GOOD.replace("fake-noop-api", "my-own-problem"))
    chosen = select_problems(plugin_host, problem=(str(path),))
    assert [p.id for p in chosen] == ["my-own-problem"] and chosen[0].source == path


def test_a_bad_path_names_the_file_and_the_json_path(tmp_path, plugin_host):
    from sregym_core.cli._select import select_problems
    from sregym_core.errors import ConfigError

    path = tmp_path / "broken.yaml"
    path.write_text(BAD)
    try:
        select_problems(plugin_host, problem=(str(path),))
    except ConfigError as exc:
        assert str(path) in exc.render() and "$.faults" in exc.render()
    else:
        raise AssertionError("a bad problem file was accepted")


def test_suites_are_tags(tmp_path, register_plugin, fake_app, plugin_host):
    from sregym_core.cli._select import select_problems

    _ship(tmp_path, register_plugin, fake_app)
    (tmp_path / "problems" / "bad.yaml").unlink()
    plugin_host._cache.clear()
    assert [p.id for p in select_problems(plugin_host, suite="smoke")] == ["fake-noop-api"]


UNRESOLVABLE = """id: fake-needs-a-missing-pack
app: fake-app
tags: [lite]
faults:
  - fault: fault-from-a-pack-not-installed
    target: api
"""


def test_a_problem_whose_fault_is_not_installed_is_skipped_in_a_suite_and_refused_by_id(
        tmp_path, register_plugin, fake_app, plugin_host, sregym_cli):
    from sregym_core.cli._select import select_problems
    from sregym_core.errors import ConfigError

    problems = _ship(tmp_path, register_plugin, fake_app)
    (problems / "needs-pack.yaml").write_text(UNRESOLVABLE)
    plugin_host._cache.clear()
    said: list[str] = []
    assert [p.id for p in select_problems(plugin_host, suite="lite", say=said.append)] == ["fake-noop-api"]
    warning = next(w for w in said if "fake-needs-a-missing-pack" in w)
    assert "at $.faults[0].fault: unknown fault 'fault-from-a-pack-not-installed'" in warning and "hint:" in warning
    with pytest.raises(ConfigError, match="fake-needs-a-missing-pack cannot run on the installed plugins"):
        select_problems(plugin_host, problem=("fake-needs-a-missing-pack",), say=said.append)
    outcome = sregym_cli("list-problems", "--all").assert_success()
    row = next(line for line in outcome.output.splitlines() if "fake-needs-a-missing-pack" in line)
    assert "BROKEN" in row
