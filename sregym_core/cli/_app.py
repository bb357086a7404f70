"""The context object every command receives, and the shared options."""

from __future__ import annotations

import functools
import json
from typing import Any, NoReturn

import attrs
import click

from ..errors import SregymError


@attrs.define
class App:
    """Plugin host, output helpers and settings shared by commands (``@click.pass_obj``)."""

    debug: bool = False
    verbose: int = 0
    quiet: bool = False
    _host: Any = None
    _configured: bool = False

    def configure(self, *, verbose: int = 0, quiet: bool = False, debug: bool = False, log_format: str = "auto") -> None:
        from .. import logging as sregym_logging

        self.verbose, self.quiet, self.debug = verbose, quiet, debug
        if not self._configured and not sregym_logging.is_configured():  # exactly once per process
            level = "debug" if debug or verbose >= 2 else "info" if verbose == 1 else "error" if quiet else "warning"
            sregym_logging.configure(level=level, fmt=log_format)
            self._configured = True

    @property
    def host(self):
        if self._host is None:
            from ..plugins import process_host

            self._host = process_host()
        return self._host

    def echo(self, text: str = "", **kwargs: Any) -> None:
        click.echo(text, **kwargs)

    def echo_json(self, data: Any) -> None:
        click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))

    def abort(self, message: str, *, hints: tuple[str, ...] = (), code: int = 1) -> NoReturn:
        raise SregymError(message, hints=hints, exit_code=code)


def common_options(func):
    """``-v/-q/--debug/--log-format``, shared by the root group."""

    @click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
    @click.option("-q", "--quiet", is_flag=True, help="Only errors.")
    @click.option("--debug", is_flag=True, envvar="SREGYM_DEBUG", help="Show tracebacks and debug logs.")
    @click.option("--log-format", type=click.Choice(["auto", "console", "json"]), default="auto", show_default=True,
                  help="Log renderer (logs go to stderr).")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def render_table(headers: list[str], rows: list[list[Any]], fmt: str = "table") -> str:
    """Plain aligned text table, or a Markdown table."""
    cells = [[str(c) for c in row] for row in rows]
    if fmt == "markdown":
        out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(r) + " |" for r in cells]
        return "\n".join(out)
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)).rstrip()  # noqa: E731
    return "\n".join([line(headers)] + [line(r) for r in cells])
