"""structlog configuration: called exactly once, by the CLI (and by tests through the harness)."""

from __future__ import annotations

import logging
import sys

import structlog

_configured = False

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure(*, level: str = "warning", fmt: str = "auto", stream=None) -> None:
    """Configure structlog for the process.

    :param level: minimum level (``debug``, ``info``, ``warning``, ``error``).
    :param fmt: ``console``, ``json`` or ``auto`` (console on a TTY, JSON otherwise).
    :param stream: where to write (stderr by default; stdout is for command output).
    """
    global _configured
    _configured = True
    stream = stream or sys.stderr
    if fmt == "auto":
        fmt = "console" if getattr(stream, "isatty", lambda: False)() else "json"
    renderer = structlog.dev.ConsoleRenderer(colors=False) if fmt == "console" else structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.WARNING)),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )


def is_configured() -> bool:
    return _configured


def level_from_flags(argv: list[str]) -> str:
    """The level the root command's flags ask for (used before click parses, so plugin loading
    already logs at the right level)."""
    verbose = sum(a.count("v") for a in argv if a.startswith("-") and not a.startswith("--") and set(a[1:]) == {"v"})
    verbose += argv.count("--verbose")
    if "--debug" in argv or verbose >= 2:
        return "debug"
    if verbose == 1:
        return "info"
    if "-q" in argv or "--quiet" in argv:
        return "error"
    return "warning"
