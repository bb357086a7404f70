#!/usr/bin/env python3
"""Install every package of the repo in editable mode into one virtual environment, in one pip run.

    python tools/dev_install.py            # creates .venv if needed, installs core + every plugin
    python tools/dev_install.py --list     # just print the packages it would install

Packages are the folders with a pyproject.toml under libs/, plugins/, apps/, faults/ and agents/ (plus the
core at the root). One pip invocation resolves everything at once, which is much faster than one
install per package.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GROUPS = ("libs", "plugins", "apps", "faults", "agents")


def packages() -> list[Path]:
    found = [ROOT]
    for group in GROUPS:
        base = ROOT / group
        if base.is_dir():
            found += sorted(p.parent for p in base.glob("*/pyproject.toml") if not p.parent.name.startswith("_"))
    return found


def extras_for(path: Path) -> str:
    text = (path / "pyproject.toml").read_text()
    names = [e for e in ("run", "test", "testing") if f"\n{e} = [" in text]
    return f"[{','.join(names)}]" if names else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", default=os.environ.get("SREGYM_VENV", str(ROOT / ".venv")))
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    targets = packages()
    if args.list:
        for path in targets:
            print(path.relative_to(ROOT) if path != ROOT else ".")
        return 0
    venv_dir = Path(args.venv)
    python = venv_dir / "bin" / "python"
    if not python.exists():
        venv.create(venv_dir, with_pip=True)
    command = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    for path in targets:
        command += ["-e", f"{path}{extras_for(path)}"]
    print(f"installing {len(targets)} packages into {venv_dir}", flush=True)
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
