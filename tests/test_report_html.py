"""The static HTML report: layout arithmetic, pages written from recorded results, escaping, the CLI.

What the pages look like in a browser is tested in test_report_browser.py (headless Chromium).
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from sregym_core.results import AttemptRecord, ResultsWriter, render_html, write_html_report
from sregym_core.results.report import write_report
from sregym_core.results.report.charts import (
    Mark,
    RateBar,
    Segment,
    duration_chart,
    rate_chart,
    timeline_chart,
)
from sregym_core.results.report.measure import (
    ELLIPSIS,
    fit_text,
    format_duration,
    text_width,
    time_ticks,
    wilson_interval,
)

DATA = Path(__file__).parent / "data" / "report-results"
SVG = "{http://www.w3.org/2000/svg}"


# ---------------------------------------------------------------- units, ticks, intervals, text


@pytest.mark.parametrize(("seconds", "text"), [
    (0.0042, "4 ms"), (0.34, "340 ms"), (1.0, "1.0 s"), (4.25, "4.2 s"), (42.4, "42 s"), (150, "2.5 min"),
    (1800, "30 min"), (7200, "2.0 h"), (None, "-"),
])
def test_durations_read_in_a_sensible_unit(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize(("high", "unit"), [(0.9, "ms"), (1.2, "s"), (6.2, "s"), (95, "s"), (600, "min"), (20000, "h")])
def test_time_axis_labels_are_distinct_and_carry_a_unit(high, unit):
    top, ticks = time_ticks(high, 5)
    labels = [label for _, label in ticks]
    assert top >= high and ticks[0][0] == 0 and len(labels) == len(set(labels)) >= 2  # never "0s 0s 0s 0s 1s"
    assert all(label.endswith(" " + unit) for label in labels), labels
    assert len(ticks) <= 6


def test_wilson_interval():
    low, high = wilson_interval(3, 3)
    assert (round(low, 4), high) == (0.4385, 1.0)  # n / (n + z²)
    low, high = wilson_interval(0, 1)
    assert (low, round(high, 3)) == (0.0, 0.793)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(50, 100)
    assert round(low, 3) == 0.404 and round(high, 3) == 0.596


def test_fit_text_keeps_short_labels_and_ellipsizes_long_ones():
    assert fit_text("hotel-wrong-image-geo", 12, 400) == "hotel-wrong-image-geo"
    cut = fit_text("x" * 200, 12, 100)
    assert cut.endswith(ELLIPSIS) and text_width(cut, 12) <= 100 and len(cut) > 5
    assert text_width("WWW", 12) > text_width("iii", 12)  # proportional, not a fixed width per character
    assert text_width("日本", 12) >= 2 * 12  # unknown glyphs count as a full em: never under-estimated


# ---------------------------------------------------------------- charts


def _texts(svg: str) -> list[ET.Element]:
    return ET.fromstring(svg).findall(f".//{SVG}text")


def _shown(text: ET.Element) -> str:
    """The visible text of an SVG text element (its tooltip child is not drawn)."""
    return (text.text or "") + "".join((child.tail or "") for child in text)


def _check_fits(svg: str) -> None:
    """Every label, by its measured width, lies inside the chart (what the browser test checks for real)."""
    root = ET.fromstring(svg)
    width = float(root.get("width"))
    for text in root.iter(f"{SVG}text"):
        shown = _shown(text)
        w = text_width(shown, float(text.get("font-size")))
        x = float(text.get("x"))
        left = {"start": x, "middle": x - w / 2, "end": x - w}[text.get("text-anchor")]
        assert -0.5 <= left and left + w <= width + 0.5, (shown, left, w, width)


def test_rate_chart_keeps_long_labels_and_describes_itself():
    long = "hotel-a-problem-with-a-very-long-name-" * 4
    svg = rate_chart("c", "Success", [("hotel-wrong-image-geo", [RateBar(2, 3), None]), (long, [RateBar(0, 1), RateBar(1, 1)])],
                     ["reference", "noop"])
    root = ET.fromstring(svg)
    assert root.get("role") == "img" and root.find(f"{SVG}title").text == "Success"
    assert "hotel-wrong-image-geo: reference 67% of 3" in root.find(f"{SVG}desc").text
    labels = {_shown(t) for t in _texts(svg)}
    assert "hotel-wrong-image-geo" in labels  # whole, not "ung-image-geo"
    cut = next(t for t in _texts(svg) if _shown(t).startswith("hotel-a-problem"))
    assert _shown(cut).endswith(ELLIPSIS) and cut.find(f"{SVG}title").text == long  # the full name as tooltip
    assert len(root.findall(f".//{SVG}rect[@class='bar']")) == 3  # a missing series draws no bar
    assert "67% (2/3)" in labels and "95% CI 21-94%" in svg
    _check_fits(svg)


def test_duration_chart_uses_units_and_fits():
    svg = duration_chart("d", "TTD", [("reference", [0.21, 0.9, 0.65]), ("an-agent-with-a-long-name (model-x)", [0.3])])
    labels = [_shown(t) for t in _texts(svg)]
    ticks = [label for label in labels if re.fullmatch(r"[\d.]+ ms", label)]
    assert len(ticks) >= 3 and len(set(ticks)) == len(ticks)
    assert "median 650 ms (n=3)" in labels
    assert len(ET.fromstring(svg).findall(f".//{SVG}circle")) == 4
    _check_fits(svg)
    assert "nothing" in duration_chart("d", "TTD", [("a", [])], empty="nothing recorded")


def test_timeline_links_steps_and_labels_only_segments_with_room():
    svg = timeline_chart("t", "Timeline", [Segment("diagnosis", 0, 0.2, "setup + diagnosis"),
                                           Segment("mitigation", 0.2, 6.0, "mitigation"),
                                           Segment("grading", 6.0, 21.5, "grading + teardown")],
                         [Mark(at=0.1, label="step 1", href="#step-1"), Mark(at=5.5, label="noise", kind="event")], 21.5)
    root = ET.fromstring(svg)
    links = root.findall(f".//{SVG}a")
    assert [a.get("href") for a in links] == ["#step-1"] and links[0].get("aria-label") == "step 1"
    inside = [_shown(t) for t in _texts(svg)]
    assert "grading + teardown" in inside and inside.count("setup + diagnosis") == 1  # only in the legend
    assert "event" in inside  # the legend names event marks
    _check_fits(svg)


# ---------------------------------------------------------------- pages from recorded results


@pytest.fixture
def recorded(tmp_path):
    for name in ("geo-image", "mixed"):
        shutil.copytree(DATA / name, tmp_path / name)
    return tmp_path


def test_report_of_recorded_results(recorded):
    out = write_report([recorded / "geo-image", recorded / "mixed"], recorded / "out" / "report.html",
                       layers={"hotel-scale-zero-rate": "k8s"})
    page = out.read_text()
    assets = recorded / "out" / "report_files"
    assert (assets / "report.css").exists()
    pages = sorted(p.name for p in (assets / "attempts").iterdir())
    assert len(pages) == 9
    links = re.findall(r'href="report_files/attempts/([^"]+)"', page)
    assert set(links) == set(pages)
    assert "Content-Security-Policy" in page and "script-src" not in page and "default-src 'none'" in page
    _assert_inert(page)
    for svg in re.findall(r"<svg.*?</svg>", page, re.S):
        ET.fromstring(svg)  # well-formed
        _check_fits(svg)
    # leaderboard: reference first, both results directories as columns, intervals
    board = page.split('id="leaderboard"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", board.split("<tbody>", 1)[1])
    assert rows[0].startswith('<th scope="row">1. reference') and "geo-image" in board and "mixed" in board
    assert "100%</span> <span class=\"muted\">2/2" in rows[0]  # mixed: both reference attempts succeeded
    layers = page.split('id="layers"', 1)[1].split("</section>", 1)[0]
    assert ">datastore<" in layers and ">k8s<" in layers  # layers from the judge's ground truth
    assert "time limit: agent" in page  # the timeout's reason


def test_attempt_page_shows_answers_oracle_tree_trajectory(recorded):
    out = write_report([recorded / "geo-image"], recorded / "report.html")
    noop = next((recorded / "report_files" / "attempts").glob("*-noop-1-*.html")).read_text()
    assert "<h1>hotel-wrong-image-geo \u00b7 noop \u00b7 attempt 1</h1>" in noop
    assert noop.count("<tr class=\"fail\">") + noop.count("<tr class=\"ok\">") >= 9  # nine answers
    assert "does not name geo" in noop  # evidence
    assert "fault_invariant" in noop and "fault still present: f0" in noop  # oracle tree with evidence
    assert 'id="step-1"' in noop and 'id="step-2"' in noop and "No fault found" in noop
    assert 'href="#step-1"' in noop  # the timeline links its steps
    assert f'href="../../{out.name}"' in noop and 'href="../report.css"' in noop
    reference = next((recorded / "report_files" / "attempts").glob("*-reference-1-*.html")).read_text()
    assert "get pods -n hotel-reservation" in reference and "apiVersion" in reference  # tool call and its output


class _Markup(HTMLParser):
    """Every element and attribute a browser would build from a page."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: list[tuple[str, str]] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes += [(name, value or "") for name, value in attrs]


def _assert_inert(page: str) -> None:
    markup = _Markup(page)
    assert not markup.tags & {"script", "img", "iframe", "object", "embed"}, markup.tags
    assert not [a for a in markup.attributes if a[0].startswith("on")]
    assert not [a for a in markup.attributes if a[0] == "href" and a[1].strip().lower().startswith("javascript:")]


def test_hostile_record_is_text_not_markup(recorded):
    write_report([recorded / "geo-image"], recorded / "report.html")
    hostile = next((recorded / "report_files" / "attempts").glob("*-hostile-1-*.html")).read_text()
    index = (recorded / "report.html").read_text()
    for page in (hostile, index):
        _assert_inert(page)
    assert "&lt;script&gt;document.body.dataset.pwned=&#x27;output&#x27;&lt;/script&gt;" in hostile
    assert "&lt;img src=x onerror=" in hostile


def test_trajectory_outside_the_results_directory_is_not_read(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"schema_version": "ATIF-v1.4", "steps": [{"step_id": 1, "source": "agent",
                                                                          "message": "TOP SECRET"}]}))
    results = tmp_path / "results"
    ResultsWriter(results).append(AttemptRecord(run_id="r", problem_id="p", agent="a", attempt=1,
                                                trajectory_path="../secret.json"))
    write_report([results], tmp_path / "out" / "report.html")
    page = next((tmp_path / "out" / "report_files" / "attempts").glob("*.html")).read_text()
    assert "TOP SECRET" not in page and "outside the results directory" in page


def test_noise_events_are_listed_and_marked_on_the_timeline(tmp_path):
    results = tmp_path / "results"
    record = AttemptRecord(run_id="r", problem_id="p", agent="a", attempt=1, started_at="2026-01-01T00:00:00.000Z",
                           finished_at="2026-01-01T00:00:30.000Z", time_to_diagnose_s=10, time_to_mitigate_s=20,
                           extra={"noise_events": [{"name": "pod-kill", "target": "search", "at": "2026-01-01T00:00:12Z"},
                                                   {"name": "<b>load-spike</b>", "offset_s": 15.5}]})
    ResultsWriter(results).append(record)
    write_report([results], tmp_path / "report.html")
    page = next((tmp_path / "report_files" / "attempts").glob("*.html")).read_text()
    section = page.split('id="noise"', 1)[1].split("</section>", 1)[0]
    assert "pod-kill" in section and "12 s" in section and "16 s" in section and "&lt;b&gt;load-spike" in section
    assert "noise at 12 s: pod-kill" in page  # a mark on the timeline


def test_records_without_optional_parts_still_render():
    page = render_html([AttemptRecord(run_id="r", problem_id="p", agent="a", attempt=1, deploy_failed=True)])
    assert "not deployed" in page and "1 attempts" in page
    assert "No attempts recorded" in render_html([])


def test_write_html_report_default_location(recorded):
    path = write_html_report(recorded / "mixed")
    assert path == recorded / "mixed" / "report.html" and (recorded / "mixed" / "report_files" / "report.css").exists()


# ---------------------------------------------------------------- command line


def test_cli_report_several_directories(sregym_cli, recorded):
    result = sregym_cli("report", str(recorded / "geo-image"), str(recorded / "mixed"), "--out", str(recorded / "site"))
    result.assert_success()
    assert (recorded / "site" / "report.html").exists() and "hotel-db-revoke-geo" in result.output
    assert "HTML report:" in result.output
    missing = sregym_cli("report", str(recorded / "nope"))
    assert missing.exit_code != 0 and "no results in" in missing.stderr


def test_multi_part_content_reads_as_text(tmp_path):
    results = tmp_path / "results"
    writer = ResultsWriter(results)
    path = writer.trajectory_path("p", "a", 1, "r")
    path.write_text(json.dumps({"schema_version": "ATIF-v1.7", "steps": [
        {"step_id": 1, "source": "agent", "message": [{"type": "text", "text": "first part"}, {"type": "text", "text": "second"}],
         "observation": {"results": [{"source_call_id": "c1", "content": [{"type": "text", "text": "pods: 3 running"}]}]}}]}))
    writer.append(AttemptRecord(run_id="r", problem_id="p", agent="a", attempt=1, trajectory_path=writer.relative(path)))
    write_report([results], tmp_path / "report.html")
    page = next((tmp_path / "report_files" / "attempts").glob("*.html")).read_text()
    assert "first part\nsecond" in page and "pods: 3 running" in page and "&quot;type&quot;" not in page


def test_breakdown_of_a_long_run_draws_one_bar_per_problem(tmp_path):
    results = tmp_path / "results"
    writer = ResultsWriter(results)
    for p in range(30):
        for a in range(5):
            writer.append(AttemptRecord(run_id="r", problem_id=f"problem-{p:02d}", agent=f"agent-{a}", attempt=1,
                                        diagnosis_passed=True, mitigation_passed=p % 2 == 0))
    write_report([results], tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    chart = re.search(r'<svg[^>]*id="chart-problems".*?</svg>', page, re.S).group(0)
    assert len(ET.fromstring(chart).findall(f".//{SVG}rect[@class='bar']")) == 30  # not 150
    assert "all agents together" in chart
    table = page.split('id="problems"', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 31 and "<th scope=\"col\">agent-4</th>" in table  # the table keeps every agent
