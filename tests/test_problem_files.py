"""Problem files shipped by plugins: a bad one is reported with its path and skipped by listings,
refused by run; ``--problem`` also takes a path to a problem file."""

from __future__ import annotations

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


def test_run_refuses_while_a_shipped_file_is_bad(tmp_path, register_plugin, fake_app, sregym_cli):
    problems = _ship(tmp_path, register_plugin, fake_app)
    outcome = sregym_cli("run", "--suite", "lite", "--agent", "echo").assert_failed()
    assert str(problems / "bad.yaml") in outcome.stderr and "refusing" in outcome.stderr
    assert "Traceback" not in outcome.stderr


def test_problem_accepts_a_path(tmp_path, plugin_host, register_plugin, fake_app):
    from sregym_core.cli._select import select_problems

    register_plugin(sregym_noop.plugin, name="noop")
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
