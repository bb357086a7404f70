"""The ``sregym`` command line: a root group, one module per command."""

from __future__ import annotations

import os
import signal
import sys
import traceback

import click

from .. import __version__
from ..errors import SregymError
from ._app import App, common_options


class SregymGroup(click.Group):
    """Root group that turns errors into ``Error: ...`` lines with hints, never tracebacks."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except SregymError as exc:
            if os.environ.get("SREGYM_RAISE_ERRORS") == "1":
                raise
            click.echo(exc.render(), err=True)
            if _debug(ctx):
                click.echo(traceback.format_exc(), err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(130)
        except Exception as exc:
            if os.environ.get("SREGYM_RAISE_ERRORS") == "1":
                raise
            click.echo(f"Error: unexpected {type(exc).__name__}: {exc}", err=True)
            if _debug(ctx):
                click.echo(traceback.format_exc(), err=True)
            else:
                click.echo("  hint: run with --debug for the traceback", err=True)
            ctx.exit(1)


def _debug(ctx: click.Context) -> bool:
    app = ctx.find_object(App)
    return bool((app and app.debug) or os.environ.get("SREGYM_DEBUG") == "1")


@click.group(cls=SregymGroup, context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "SREGYM"})
@click.version_option(__version__, prog_name="sregym")
@common_options
@click.pass_context
def cli(ctx: click.Context, verbose: int, quiet: bool, debug: bool, log_format: str) -> None:
    """SREGym: a live benchmark and training ground for AI SRE agents."""
    app = ctx.ensure_object(App)
    app.configure(verbose=verbose, quiet=quiet, debug=debug, log_format=log_format)


def _add_builtin_commands(group: click.Group) -> None:
    # explicit imports: a command module that fails to import is an error naming it, never a missing command
    from . import deploy, report, run, validate
    from .list_apps import list_apps
    from .list_faults import list_faults
    from .list_problems import list_problems
    from .plugins import plugins_list
    from .schema import schema_show

    group.add_command(plugins_list)
    group.add_command(list_apps)
    group.add_command(list_faults)
    group.add_command(list_problems)
    group.add_command(schema_show)
    group.add_command(run.command)
    group.add_command(validate.command)
    group.add_command(deploy.command)
    group.add_command(report.command)


_add_builtin_commands(cli)
_plugin_commands_added = False


def register_plugin_commands(host=None) -> None:
    """Let plugins add commands (once per process, after plugins are loaded)."""
    global _plugin_commands_added
    if _plugin_commands_added:
        return
    from ..plugins import process_host

    host = host or process_host()
    host.register_commands(cli)
    _plugin_commands_added = True


def _terminate_as_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # `kill <pid>` (a CI timeout, a scheduler) stops a run as Ctrl-C does: the clean-up in finally blocks
    # (clusters started for the run, agent identities, the Ray executor's local cluster) runs instead of
    # the process vanishing and leaving them behind
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    debug = "--debug" in argv or os.environ.get("SREGYM_DEBUG") == "1"
    from .. import logging as sregym_logging

    fmt = argv[argv.index("--log-format") + 1] if "--log-format" in argv[:-1] else "auto"
    sregym_logging.configure(level="debug" if debug else sregym_logging.level_from_flags(argv),
                             fmt=fmt if fmt in ("auto", "console", "json") else "auto")
    try:
        register_plugin_commands()
    except SregymError as exc:
        click.echo(exc.render(), err=True)
        if debug:
            click.echo(traceback.format_exc(), err=True)
        sys.exit(exc.exit_code)
    cli.main(args=argv, prog_name="sregym", obj=App())
