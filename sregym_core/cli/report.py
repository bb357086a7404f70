"""``sregym report DIR [DIR...]``: summary table and a static HTML report of recorded attempts."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import UsageError
from ._app import App


@click.command(name="report")
@click.argument("results_dirs", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="DIR [DIR...]")
@click.option("--out", "--html", "out", type=click.Path(path_type=Path),
              help="The HTML file to write, or a folder for report.html (assets go to <name>_files/ next to it). "
                   "Default: DIR/report.html for one directory, ./report.html for several.")
@click.option("--title", help="Title of the report.")
@click.pass_obj
def command(app: App, results_dirs: tuple[Path, ...], out: Path | None, title: str | None) -> None:
    """Print the per problem × agent summary of each DIR and write a static HTML report.

    With several directories (say, one per suite or per model), the report ranks agents across
    them in a leaderboard. The report opens from disk: report.html plus report_files/.
    """
    from ..results.report import REPORT_NAME, write_report
    from ..results.summary import summary_table

    for directory in results_dirs:
        if not (directory / "results.jsonl").exists():
            raise UsageError(f"no results in {directory}", hints=("run `sregym run ... --results DIR` first",))
    if out is None:
        out = results_dirs[0] / REPORT_NAME if len(results_dirs) == 1 else Path(REPORT_NAME)
    elif out.is_dir() or out.suffix.lower() not in (".html", ".htm"):  # a folder to put report.html in
        out = out / REPORT_NAME
    for directory in results_dirs:
        if len(results_dirs) > 1:
            app.echo(f"\n{directory}:")
        app.echo(summary_table(directory))
    path = write_report(results_dirs, out, title=title, layers=_problem_layers(app))
    app.echo(f"\nHTML report: {path} (open it in a browser; attempt pages are in {path.stem}_files/)")


def _problem_layers(app: App) -> dict[str, str]:
    """Problem id → fault layer from the installed problems (records made by older versions lack it)."""
    try:
        return {pid: spec.layer for pid, spec in app.host.get_problems().items()}
    except Exception:  # a broken plugin must not stop a report of results already on disk
        return {}
