"""The builtin results plugin (``results-writer``): a run's records on disk, from the lifecycle hooks.

The conductor, the RL environment and executors never write a record themselves: they hand each one
to the plugin host (``sregym_attempt_finished``), between ``sregym_run_started`` and
``sregym_run_finished``. This plugin, registered by the host like every builtin
(:data:`sregym_core.plugins.DEFAULT_PLUGINS`), is the one that writes them, as pytest's junitxml and
terminal reporter are plugins on pytest's own hooks:

* ``results.jsonl`` and ``results.csv`` (:class:`~sregym_core.results.writer.ResultsWriter`): each
  record appended, flushed and fsynced before the next plugin hears of it (``tryfirst``), so a
  crash loses at most the attempt in progress and ``--resume`` reads what is on disk;
* upstream SREGym's layout (:class:`~sregym_core.results.upstream_csv.UpstreamLayout`): per run,
  under ``<MMDD_HHMM>/`` of the time the run started, ``run_<n>/<problem>_results.csv``, the
  problem's and the agent's ``*_results.csv`` and the trajectory. An RL environment announces no run;
  its episodes go to ``results.jsonl``/``results.csv`` only.

Another plugin adds a sink by implementing the same hooks; ``SREGYM_DISABLE_PLUGINS=results-writer``
(or ``host.block("results-writer")``) replaces this one. A sink of another plugin that raises is
reported and costs nothing here: the host calls every implementation on its own, this one first.

.. versionadded:: 0.3
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import attrs

from .. import hookimpl
from .record import AttemptRecord
from .upstream_csv import UpstreamLayout
from .writer import ResultsWriter


@attrs.define
class _Open:
    """What this plugin keeps for one results directory while records arrive."""

    writer: ResultsWriter
    upstream: UpstreamLayout | None  # None: records without a run (RL episodes), no upstream layout


_lock = threading.Lock()
_open: dict[Path, _Open] = {}


def _key(results_dir: str) -> Path:
    return Path(results_dir).absolute()


@hookimpl
def sregym_run_started(results_dir: str, run_id: str) -> None:
    with _lock:
        _open[_key(results_dir)] = _Open(ResultsWriter(results_dir), UpstreamLayout(results_dir))


@hookimpl(tryfirst=True)
def sregym_attempt_finished(record: AttemptRecord, results_dir: str | None) -> None:
    if results_dir is None:  # a caller that records nowhere
        return
    with _lock:
        sink = _open.get(_key(results_dir))
        if sink is None:  # records without a run around them (an RL environment's episodes)
            sink = _open[_key(results_dir)] = _Open(ResultsWriter(results_dir), None)
    sink.writer.append(record)
    if sink.upstream is not None:
        trajectory = Path(results_dir) / record.trajectory_path if record.trajectory_path else None
        sink.upstream.append(record, trajectory)


@hookimpl(tryfirst=True)
def sregym_run_finished(results_dir: str, records: list[Any]) -> None:
    with _lock:
        _open.pop(_key(results_dir), None)
