"""A self-contained static report of one or more results directories.

``sregym report DIR [DIR...]`` writes ``report.html`` and, next to it, ``report_files/`` with the
stylesheet and one page per attempt. Nothing is fetched and nothing runs: the pages are plain
HTML and SVG (see :mod:`.charts` for why no charting library) under a policy that forbids
scripts, so the report opens from disk, works offline and can be attached to a CI run.

Main page: overview (success, diagnosis and mitigation rates with Wilson intervals, time to
diagnose and to mitigate, tokens and cost per agent and model), a leaderboard of agents (with their
models) × suites (the results directories) with attempts and Wilson intervals, per-problem and
per-layer breakdowns, the diagnosis checklist, and every attempt.
Attempt pages: the judge's answers with evidence, the mitigation oracle tree with evidence, noise
events, a timeline of stage changes and the trajectory step by step.

.. versionadded:: 0.1
.. versionchanged:: 0.2 several directories, attempt pages, leaderboard; charts that keep their labels.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..record import AttemptRecord
from .attempt_page import render_attempt
from .charts import RateBar, duration_chart, rate_chart, timeline_chart
from .index_page import render_index
from .measure import format_duration, time_ticks, wilson_interval
from .model import ResultSet, attempts_of, load_sets

REPORT_NAME = "report.html"
_CSS = Path(__file__).with_name("assets") / "report.css"


def assets_dir(out: Path) -> Path:
    """The folder next to the HTML file that holds its stylesheet and attempt pages."""
    return out.with_name(f"{out.stem}_files")


def write_report(directories: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *,
                 title: str | None = None, layers: Mapping[str, str] | None = None) -> Path:
    """Write the report of ``directories`` to ``out`` (an HTML file) and its assets folder; returns ``out``.

    :param layers: problem id -> fault layer, for problems whose records do not say.
    """
    sets = load_sets(directories)
    return _write(sets, Path(out), title=title or _default_title(sets), layers=layers or {})


def _default_title(sets: Sequence[ResultSet]) -> str:
    return "SREGym results: " + ", ".join(s.label for s in sets) if sets else "SREGym results"


def _write(sets: Sequence[ResultSet], out: Path, *, title: str, layers: Mapping[str, str]) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    assets = assets_dir(out)
    pages_dir = assets / "attempts"
    pages_dir.mkdir(parents=True, exist_ok=True)
    for stale in pages_dir.glob("*.html"):  # pages of attempts no longer in the results
        stale.unlink()
    shutil.copyfile(_CSS, assets / "report.css")
    attempts = attempts_of(sets)
    for attempt in attempts:
        html = render_attempt(attempt, index_href=f"../../{out.name}", css_href="../report.css", report_title=title)
        (pages_dir / attempt.page).write_text(html, encoding="utf-8")
    out.write_text(render_index(sets, attempts, title=title, assets=assets.name, layers=layers), encoding="utf-8")
    return out


def write_html_report(directory: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> Path:
    """The report of one results directory, by default as ``DIR/report.html``."""
    return write_report([directory], Path(out) if out else Path(directory) / REPORT_NAME)


def render_html(records: Sequence[AttemptRecord], *, title: str = "SREGym results", label: str = "results") -> str:
    """The main page for ``records`` alone (no attempt pages are written; its links point to where
    :func:`write_report` puts them)."""
    from ..summary import latest_per_key

    sets = [ResultSet(label=label, directory=None, records=tuple(latest_per_key(records)))]
    return render_index(sets, attempts_of(sets), title=title, assets=assets_dir(Path(REPORT_NAME)).name, layers={})


__all__ = [
    "REPORT_NAME", "RateBar", "assets_dir", "duration_chart", "format_duration", "rate_chart", "render_html",
    "time_ticks", "timeline_chart", "wilson_interval", "write_html_report", "write_report",
]
