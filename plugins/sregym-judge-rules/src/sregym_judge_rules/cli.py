"""``sregym judge ...``: judge calibration (the labelled sets ship with judge-rules)."""

from __future__ import annotations

import json

import click

from sregym_core.errors import SregymError


@click.group(name="judge")
def judge_group() -> None:
    """Diagnosis judges: calibration and agreement."""


LLM_JUDGES = ("judge-llm", "judge-llm-gated")


@judge_group.command(name="calibrate")
@click.option(
    "--judge", "judges", multiple=True, default=(),
    help="A judge to calibrate (repeatable; agreement between judges is reported too). Default: judge-rules, plus "
         "judge-llm and judge-llm-gated when a judge model is configured.",
)
@click.option("--dataset", type=click.Path(dir_okay=False), default=None,
              help="A labelled set: .yaml (pass/fail labels) or .jsonl (per-question labels). Default: the shipped labelled.yaml.")
@click.option("--set", "blind_set", type=click.Path(dir_okay=False), default=None,
              help="A blind set (JSON Lines: id, problem_id, voice, category, label pass|fail, diagnosis, why) over "
                   "the installed curated problems. Prints only aggregate figures unless --show-items.")
@click.option("--show-items", is_flag=True,
              help="With --set: also list the ids of the items the judge gets wrong (not for a held-out set).")
@click.option("--judge-model", default=None, help="Model for the LLM judges (litellm string). [env JUDGE_MODEL, JUDGE_MODEL_ID]")
@click.option("--judge-api-base", envvar="JUDGE_API_BASE", default=None, help="Base URL for the LLM judges. [env JUDGE_API_BASE]")
@click.option("--judge-api-key", envvar="JUDGE_API_KEY", default=None, help="API key for the LLM judges. [env JUDGE_API_KEY]")
@click.option("--judge-rubric", type=click.Choice(["sregym", "upstream"]), default="sregym", show_default=True,
              help="The checklist the judges answer.")
@click.option("--threshold", type=click.FloatRange(0, 1, min_open=True), default=None, help="Composite score needed to pass.")
@click.option("--truth", type=click.Choice(["run", "detached"]), default="run", show_default=True,
              help="With --set: the ground truths as a run derives them (each fault previewed on the app's rendered "
                   "objects) or as declared before injection (values read from the cluster missing; figures before "
                   "2026-12-01).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def judge_calibrate(judges, dataset, blind_set, show_items, judge_model, judge_api_base, judge_api_key, judge_rubric, threshold,
                    truth, as_json) -> None:
    """Judges against hand labels: confusion matrix, false-pass and false-fail rates per category
    (per app and per voice when the set says), Cohen's kappa (per question too when the set has
    per-question labels), agreement between judges."""
    import os

    import attrs

    if blind_set and dataset:
        raise click.UsageError("give --set or --dataset, not both")

    from .calibration import calibrate

    judge_model = judge_model or os.environ.get("JUDGE_MODEL") or os.environ.get("JUDGE_MODEL_ID") or None
    if not judges:
        judges = ("judge-rules", *LLM_JUDGES) if judge_model else ("judge-rules",)
    options: dict[str, dict] = {name: {} for name in ("judge-rules", *LLM_JUDGES, *judges)}
    for name in LLM_JUDGES:
        if judge_model:
            options[name]["model"] = judge_model
        if judge_api_base:
            options[name]["api_base"] = judge_api_base
        if judge_api_key:
            options[name]["api_key"] = judge_api_key
    for name in judges:
        if threshold is not None:
            options[name]["threshold"] = threshold
        if judge_rubric != "sregym":
            options[name]["rubric"] = judge_rubric

    def progress(name: str, done: int, total: int) -> None:
        if not as_json and (done == total or done % 10 == 0):
            click.echo(f"{name}: {done}/{total}", err=True)

    try:
        report = calibrate(list(judges), blind_set or dataset, options=options, progress=progress, truth=truth)
    except SregymError as exc:
        raise click.ClickException(exc.render().removeprefix("Error: ")) from None
    if blind_set and not show_items:  # a held-out set is measured without anyone seeing which items missed
        report = attrs.evolve(report, disagreements={})
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.format())
