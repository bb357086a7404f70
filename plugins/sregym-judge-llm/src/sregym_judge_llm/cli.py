"""``sregym judge ...``: commands of the judge-llm plugin."""

from __future__ import annotations

import json

import click

from sregym_core.errors import SregymError


@click.group(name="judge")
def judge_group() -> None:
    """Diagnosis judges: calibration and agreement."""


@judge_group.command(name="calibrate")
@click.option(
    "--judge", "judges", multiple=True, default=("judge-rules",), show_default=True,
    help="A judge to calibrate (repeat for two: their agreement is reported too).",
)
@click.option("--dataset", type=click.Path(dir_okay=False), default=None, help="A labelled JSONL set (default: the shipped one).")
@click.option("--judge-model", envvar="JUDGE_MODEL", default=None, help="Model for judge-llm (litellm string). [env JUDGE_MODEL]")
@click.option("--judge-api-base", envvar="JUDGE_API_BASE", default=None, help="Base URL for judge-llm. [env JUDGE_API_BASE]")
@click.option("--judge-api-key", envvar="JUDGE_API_KEY", default=None, help="API key for judge-llm. [env JUDGE_API_KEY]")
@click.option("--threshold", type=click.FloatRange(0, 1, min_open=True), default=None, help="Composite score needed to pass.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def judge_calibrate(judges, dataset, judge_model, judge_api_base, judge_api_key, threshold, as_json) -> None:
    """Agreement (Cohen's kappa) of judges with the labels and with each other."""
    from .calibration import calibrate

    options: dict[str, dict] = {"judge-llm": {}, "judge-rules": {}}
    if judge_model:
        options["judge-llm"]["model"] = judge_model
    if judge_api_base:
        options["judge-llm"]["api_base"] = judge_api_base
    if judge_api_key:
        options["judge-llm"]["api_key"] = judge_api_key
    if threshold is not None:
        for judge in judges:
            options.setdefault(judge, {})["threshold"] = threshold

    def progress(name: str, done: int, total: int) -> None:
        if not as_json and (done == total or done % 10 == 0):
            click.echo(f"{name}: {done}/{total}", err=True)

    try:
        report = calibrate(list(judges), dataset, options=options, progress=progress)
    except SregymError as exc:
        raise click.ClickException(exc.render().removeprefix("Error: ")) from None
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.format())
