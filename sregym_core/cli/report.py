"""``sregym report DIR``: summary table and HTML report of recorded attempts."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import UsageError
from ._app import App


@click.command(name="report")
@click.argument("results_dir", type=click.Path(path_type=Path))
@click.option("--html", "html_path", type=click.Path(path_type=Path), help="Where to write the HTML report.")
@click.pass_obj
def command(app: App, results_dir: Path, html_path: Path | None) -> None:
    """Print the per problem × agent summary of RESULTS_DIR and write report.html."""
    from ..results.report import write_html_report
    from ..results.summary import summary_table

    if not (results_dir / "results.jsonl").exists():
        raise UsageError(f"no results in {results_dir}", hints=("run `sregym run ... --results DIR` first",))
    app.echo(summary_table(results_dir))
    out = write_html_report(results_dir, html_path)
    app.echo(f"\nHTML report: {out}")
