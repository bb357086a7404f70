"""Errors shown to SREGym users.

Every error that crosses a plugin or CLI boundary is a :class:`SregymError`. The CLI prints it as
``Error: <message>`` followed by its hints and exits with its ``exit_code``; no traceback unless
``--debug``.

::

    SregymError                 base: message, hints, exit_code
    ├── UsageError              the command line was wrong
    ├── ConfigError             a file or parameter failed validation (carries JSON paths)
    ├── PluginError             a plugin failed validation, or two plugins clash
    │   └── PluginImportError       an installed plugin's entry point failed to import
    ├── ClusterError            a cluster provider could not do what was asked
    ├── DeployError             an application did not come up
    ├── FaultError              a fault could not be injected, checked or recovered
    │   ├── PermanentFaultError     retrying will not help
    │   └── TemporaryFaultError     retry after ``delay`` seconds
    ├── AgentError              an agent failed to start or crashed
    └── OracleError             a mitigation oracle or judge could not reach a verdict
"""

from __future__ import annotations

from collections.abc import Iterable


class SregymError(Exception):
    """Base class of every error SREGym shows to a user."""

    exit_code: int = 1

    def __init__(self, message: str, *, hints: Iterable[str] = (), exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hints: tuple[str, ...] = tuple(hints)
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message

    def render(self) -> str:
        """The text the CLI prints: the message, then one indented line per hint."""
        lines = [f"Error: {self.message}"]
        lines += [f"  hint: {hint}" for hint in self.hints]
        return "\n".join(lines)


class UsageError(SregymError):
    """The command line asked for something that does not exist or does not make sense."""

    exit_code = 2


class ConfigError(SregymError):
    """A user-written document or parameter set failed validation."""

    def __init__(
        self,
        message: str,
        *,
        errors: Iterable[tuple[str, str]] = (),
        source: str | None = None,
        hints: Iterable[str] = (),
    ) -> None:
        self.errors: tuple[tuple[str, str], ...] = tuple(errors)
        self.source = source
        detail = "".join(f"\n  at {path}: {why}" for path, why in self.errors)
        super().__init__(message + detail, hints=hints)


class PluginError(SregymError):
    """A plugin failed validation, or two plugins register the same name."""


class PluginImportError(PluginError):
    """An installed plugin's entry point failed to import (as pytest does, loading stops here)."""

    def __init__(self, entry_point: str, distribution: str, cause: BaseException) -> None:
        self.entry_point = entry_point
        self.distribution = distribution
        self.cause = cause
        super().__init__(
            f"plugin '{entry_point}' from distribution '{distribution}' failed to import: "
            f"{type(cause).__name__}: {cause}",
            hints=(f"uninstall it (pip uninstall {distribution}), or skip it with "
                   f"SREGYM_DISABLE_PLUGINS={entry_point}",
                   "run with --debug for the traceback"),
        )


class ClusterError(SregymError):
    """A cluster provider could not bring up, reach or reset a cluster."""


class DeployError(SregymError):
    """An application failed to deploy or to become ready."""


class FaultError(SregymError):
    """A fault could not be injected, checked or recovered."""


class PermanentFaultError(FaultError):
    """A fault operation failed and retrying will not help."""


class TemporaryFaultError(FaultError):
    """A fault operation failed but may succeed after ``delay`` seconds."""

    def __init__(self, message: str, *, delay: float = 1.0, hints: Iterable[str] = ()) -> None:
        super().__init__(message, hints=hints)
        self.delay = delay


class AgentError(SregymError):
    """An agent failed to start, crashed or broke its protocol."""


class OracleError(SregymError):
    """A mitigation oracle or diagnosis judge could not reach a verdict."""
