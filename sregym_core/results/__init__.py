"""Results: attempt records (JSONL + CSV), trajectories, summaries and the HTML report.

The conductor creates one :class:`ResultsWriter` per results directory, a
:class:`TrajectoryWriter` per attempt (at ``writer.trajectory_path(...)``) and appends one
:class:`AttemptRecord` when the attempt ends. ``sregym report DIR`` prints
:func:`summary_table` and calls :func:`write_html_report`.
"""

from __future__ import annotations

from .record import AGENT_STATUSES, SCHEMA_VERSION, STAGES, AttemptRecord, utc_now
from .report import render_html, write_html_report
from .schema import RESULT_SCHEMA, validate_record_dict
from .summary import SummaryRow, format_summary, summarize, summarize_records, summary_table
from .trajectory import ATIF_VERSION, Observation, ToolCall, TrajectoryWriter, load_trajectory
from .writer import CSV_COLUMNS, ResultsWriter, read_records

__all__ = [
    "AGENT_STATUSES",
    "ATIF_VERSION",
    "CSV_COLUMNS",
    "RESULT_SCHEMA",
    "SCHEMA_VERSION",
    "STAGES",
    "AttemptRecord",
    "Observation",
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
