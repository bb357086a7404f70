"""Results: attempt records (JSONL + CSV), trajectories, summaries and the HTML report.

The conductor reads a results directory through :class:`ResultsDir` (``--resume``'s recorded
keys), writes a :class:`TrajectoryWriter` per attempt (at ``results.trajectory_path(...)``) and
hands one :class:`AttemptRecord` to the plugin host when the attempt ends; the builtin results
plugin (:mod:`.results_writer`) appends it with a :class:`ResultsWriter`. ``sregym report DIR``
prints :func:`summary_table` and calls :func:`write_html_report`.
"""

from __future__ import annotations

from .record import AGENT_STATUSES, SCHEMA_VERSION, STAGES, AttemptRecord, utc_now
from .report import render_html, write_html_report
from .schema import RESULT_SCHEMA, validate_record_dict
from .summary import SummaryRow, format_summary, summarize, summarize_records, summary_table
from .trajectory import ATIF_VERSION, Observation, ToolCall, TrajectoryWriter, load_trajectory
from .writer import CSV_COLUMNS, ResultsDir, ResultsWriter, read_records

__all__ = [
    "AGENT_STATUSES",
    "ATIF_VERSION",
    "CSV_COLUMNS",
    "RESULT_SCHEMA",
    "SCHEMA_VERSION",
    "STAGES",
    "AttemptRecord",
    "Observation",
    "ResultsDir",
    "ResultsWriter",
    "SummaryRow",
    "ToolCall",
    "TrajectoryWriter",
    "format_summary",
    "load_trajectory",
    "read_records",
    "render_html",
    "summarize",
    "summarize_records",
    "summary_table",
    "utc_now",
    "validate_record_dict",
    "write_html_report",
]
