"""Process entry point of the app image: ``python -m sregym_app_fleetcast.serve api|load-generator``."""

from __future__ import annotations

import sys

from sregym_appkit.cli import dispatch, lazy

USAGE = "usage: python -m sregym_app_fleetcast.serve {api|load-generator}"


def _api(_rest: list[str]) -> int:
    from .api import main as api_main
    return api_main()


def main(argv: list[str] | None = None) -> int:
    return dispatch(argv, usage=USAGE, commands={"api": _api, "load-generator": lazy(f"{__package__}.workload")},
                    services=(), run_service=lambda args: 2)


if __name__ == "__main__":
    sys.exit(main())
