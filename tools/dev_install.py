#!/usr/bin/env python3
"""Install every package of the repo in editable mode into one virtual environment, in one pip run.

    python tools/dev_install.py            # creates .venv if needed, installs core + every plugin
    python tools/dev_install.py --list     # just print the packages it would install
    python tools/dev_install.py --force    # install even when nothing changed since the last install

Packages are the folders with a pyproject.toml under libs/, plugins/, apps/, faults/ and agents/ (plus the
core at the root). One pip invocation resolves everything at once, which is much faster than one
install per package.

An editable install stays valid while no package's pyproject.toml changes (the sources are imported from
the checkout), so the install is skipped when a stamp in the environment says this exact set of
pyproject files was installed last: ``.ci/run`` and ``./test.sh`` both run the setup, and the second run
would otherwise rebuild 25 editable wheels for nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tomllib
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


STAMP = ".sregym-dev-install.sha256"
#: every third-party release pinned (``--lock`` writes it from the environment): a fresh machine resolves
#: nothing, whatever PyPI published since, so CI installs what the last green run had
CONSTRAINTS = ROOT / "tools" / "constraints.txt"
#: the installer: uv resolves and installs the ~130 packages in a fraction of pip's time (a fresh setup
#: ~30 s instead of ~100 s, docs/ci.md); pip does it where uv cannot be installed
UV = "uv==0.13.9"


def build_requirements(targets: list[Path]) -> list[str]:
    """Every package's ``[build-system] requires``, installed once into the environment: the editable
    wheels are then built without isolation, which saves pip one throwaway build environment (a
    setuptools install) per package — about a minute of a fresh setup's two (docs/ci.md)."""
    found: set[str] = set()
    for path in targets:
        with open(path / "pyproject.toml", "rb") as f:
            found.update(tomllib.load(f).get("build-system", {}).get("requires", []))
    return sorted(found | {"wheel"})  # setuptools before 70.1 builds an editable wheel with `wheel`


def installer(venv_dir: Path) -> list[str]:
    """``uv pip install`` for the environment (uv installed into it by pip first), else ``pip install``."""
    python = venv_dir / "bin" / "python"
    uv = venv_dir / "bin" / "uv"
    if not uv.exists():
        subprocess.call([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", UV])
    if uv.exists():
        return [str(uv), "pip", "install", "--python", str(python), "-q"]
    print("dev_install: uv could not be installed; installing with pip", file=sys.stderr, flush=True)
    return [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]


def write_lock(venv_dir: Path) -> int:
    """Pin every third-party release the environment holds into :data:`CONSTRAINTS`."""
    frozen = subprocess.run([str(venv_dir / "bin" / "python"), "-m", "pip", "freeze", "--exclude-editable"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    pins = sorted(line for line in frozen if line and not line.startswith("#") and " @ " not in line
                  and not line.lower().startswith("uv=="))
    header = CONSTRAINTS.read_text().splitlines()[:2] if CONSTRAINTS.is_file() else []
    CONSTRAINTS.write_text("\n".join([*header, *pins]) + "\n")
    print(f"{len(pins)} releases pinned in {CONSTRAINTS.relative_to(ROOT)}")
    return 0


def install_stamp(targets: list[Path]) -> str:
    """What the install depends on: the interpreter, and every package's pyproject.toml and extras."""
    digest = hashlib.sha256(sys.version.encode())
    if CONSTRAINTS.is_file():
        digest.update(CONSTRAINTS.read_bytes())
    for path in targets:
        digest.update(f"{path}{extras_for(path)}".encode())
        digest.update((path / "pyproject.toml").read_bytes())
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", default=os.environ.get("SREGYM_VENV", str(ROOT / ".venv")))
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--force", action="store_true", help="install even if nothing changed")
    parser.add_argument("--lock", action="store_true", help=f"pin the environment's releases into {CONSTRAINTS.name}")
    args = parser.parse_args()
    targets = packages()
    if args.list:
        for path in targets:
            print(path.relative_to(ROOT) if path != ROOT else ".")
        return 0
    venv_dir = Path(args.venv)
    if args.lock:
        return write_lock(venv_dir)
    python = venv_dir / "bin" / "python"
    if not python.exists():
        venv.create(venv_dir, with_pip=True)
    stamp_file, stamp = venv_dir / STAMP, install_stamp(targets)
    if not args.force and stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        print(f"{len(targets)} packages already installed in {venv_dir} (no pyproject.toml changed)", flush=True)
        return 0
    stamp_file.unlink(missing_ok=True)  # a failed or interrupted install must not be taken as done
    pip = installer(venv_dir) + (["-c", str(CONSTRAINTS)] if CONSTRAINTS.is_file() else [])
    code = subprocess.call(pip + build_requirements(targets))
    if code != 0:
        return code
    command = pip + ["--no-build-isolation"]
    for path in targets:
        command += ["-e", f"{path}{extras_for(path)}"]
    print(f"installing {len(targets)} packages into {venv_dir}", flush=True)
    code = subprocess.call(command)
    if code == 0:
        stamp_file.write_text(stamp + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
