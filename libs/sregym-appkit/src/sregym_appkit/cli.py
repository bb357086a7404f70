"""The command line of an app image: ``python -m <app>.serve <service|command> [args]``.

One image runs every process of an app; its first argument names the service (or a command such as
``workload`` or ``migrate``), as a Kubernetes container's ``args`` do.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Mapping
from importlib import import_module

Command = Callable[[list[str]], int]


def dispatch(argv: list[str] | None, *, usage: str, commands: Mapping[str, Command], services: Collection[str],
             run_service: Command) -> int:
    """Run ``commands[name](rest)`` or ``run_service([service, *rest])``; usage on ``-h``, exit 2 on a wrong name."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name in commands:
        return commands[name](rest)
    if name not in services:
        print(f"unknown service {name!r}\n{usage}", file=sys.stderr)
        return 2
    return run_service([name, *rest])


def lazy(module: str, function: str = "main") -> Command:
    """The command ``module.function(rest)``, ``module`` imported only when the command runs: a
    process of the image loads what its one service or command needs, after the entry point's own
    setup (``commands={"load-generator": lazy(f"{__package__}.workload")}``)."""
    def command(rest: list[str]) -> int:
        run: Command = getattr(import_module(module), function)
        return run(rest)

    return command
