"""appkit runs inside the app images: no sregym_core, and no dependency an image does not install."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import sregym_appkit

LIB = Path(__file__).resolve().parent.parent
REPO = LIB.parent.parent
MODULES = ("admin", "cli", "deploy", "logs", "manifests", "stats", "tracing", "workload")


def test_every_module_imports_without_sregym_core_or_any_app():
    blocked = "import sys; [sys.modules.__setitem__(m, None) for m in ('sregym_core', 'sregym_app_hotel_reservation', " \
              "'sregym_app_social_network', 'sregym_app_astronomy_shop')]; "
    code = blocked + "; ".join(f"import sregym_appkit.{m}" for m in MODULES) + "; print('ok')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    assert sorted(p.stem for p in Path(sregym_appkit.__file__).parent.glob("*.py") if p.stem != "__init__") == \
        sorted(MODULES)


def _name(requirement: str) -> str:
    return re.split(r"[<>=\[ ;]", requirement, maxsplit=1)[0].lower()


def test_each_app_image_that_uses_appkit_installs_it_and_its_dependencies():
    deps = {_name(d) for d in tomllib.loads((LIB / "pyproject.toml").read_text())["project"]["dependencies"]}
    users = [d for d in sorted(REPO.glob("apps/*/Dockerfile"))
             if "sregym-appkit" in {_name(r) for r in
                                    tomllib.loads((d.parent / "pyproject.toml").read_text())["project"]["dependencies"]}]
    assert {d.parent.name for d in users} >= {"sregym-app-hotel-reservation", "sregym-app-social-network",
                                              "sregym-app-astronomy-shop"}
    for dockerfile in users:
        text = dockerfile.read_text()
        installed = {_name(r) for r in re.findall(r'"([A-Za-z0-9_.\[\]-]+[<>=][^"]*)"', text)}
        assert deps <= installed, f"{dockerfile}: appkit needs {sorted(deps - installed)}"
        assert "COPY libs/sregym-appkit" in text and "--no-deps /opt/sregym-appkit" in text, dockerfile
