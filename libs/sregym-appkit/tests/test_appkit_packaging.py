"""appkit runs inside the app images: no sregym_core, and no dependency an image does not install."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import sregym_appkit

LIB = Path(__file__).resolve().parent.parent
REPO = LIB.parent.parent
#: the modules the app images import (they carry no sregym_core)
IMAGE_MODULES = ("admin", "cli", "flagd", "httpserver", "logs", "manifests", "metrics", "objects", "postgres", "service",
                 "stats", "tracing", "workload")
#: image modules that need an extra's packages (``sregym-appkit[config]``: attrs; ``[flags]``: OpenFeature;
#: ``[grpc]``: grpcio), installed by the images of the apps that use them
EXTRA_MODULES = ("config", "flagclient", "jsongrpc")
#: host-side only: needs sregym-core and cryptography (the ``deploy`` extra)
HOST_MODULES = ("appspec", "deploy", "ingress", "plugin", "testing")
_BLOCKED = "import sys; [sys.modules.__setitem__(m, None) for m in ('sregym_core', 'sregym_app_hotel_reservation', " \
           "'sregym_app_social_network', 'sregym_app_astronomy_shop')]; "


def test_every_image_module_imports_without_sregym_core_or_any_app():
    code = _BLOCKED + "; ".join(f"import sregym_appkit.{m}" for m in IMAGE_MODULES + EXTRA_MODULES) + "; print('ok')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    assert sorted(p.stem for p in Path(sregym_appkit.__file__).parent.glob("*.py") if p.stem != "__init__") == \
        sorted(IMAGE_MODULES + EXTRA_MODULES + HOST_MODULES)


@pytest.mark.parametrize("module", ("appspec", "deploy", "plugin"))
def test_a_host_side_module_without_the_core_names_the_extra(module):
    proc = subprocess.run([sys.executable, "-c", _BLOCKED + f"import sregym_appkit.{module}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert f"ImportError: sregym_appkit.{module} runs on the host and needs sregym-core: " \
           "pip install 'sregym-appkit[deploy]'" in proc.stderr, proc.stderr
    extras = tomllib.loads((LIB / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert [_name(r) for r in extras["deploy"]] == ["sregym-core", "cryptography"]


def test_deploy_errors_are_the_cores_deploy_errors_with_hints():
    from sregym_appkit.deploy import DeployFailed, deploy_error

    from sregym_core.errors import DeployError

    error = deploy_error("web not Ready", ("check the kubeconfig",))
    assert isinstance(error, DeployFailed) and isinstance(error, DeployError)
    assert error.render() == "Error: web not Ready\n  hint: check the kubeconfig"


def _name(requirement: str) -> str:
    return re.split(r"[<>=\[ ;]", requirement, maxsplit=1)[0].lower()


def test_each_app_image_that_uses_appkit_installs_it_and_its_dependencies():
    deps = {_name(d) for d in tomllib.loads((LIB / "pyproject.toml").read_text())["project"]["dependencies"]}
    users = [d for d in sorted(REPO.glob("apps/*/Dockerfile"))
             if "sregym-appkit" in {_name(r) for r in
                                    tomllib.loads((d.parent / "pyproject.toml").read_text())["project"]["dependencies"]}]
    assert {d.parent.name for d in users} >= {"sregym-app-hotel-reservation", "sregym-app-social-network",
                                              "sregym-app-astronomy-shop", "sregym-app-train-ticket"}
    for dockerfile in users:
        text = dockerfile.read_text()
        installed = {_name(r) for r in re.findall(r'"([A-Za-z0-9_.\[\]-]+[<>=][^"]*)"', text)}
        assert deps <= installed, f"{dockerfile}: appkit needs {sorted(deps - installed)}"
        assert "COPY libs/sregym-appkit" in text and "--no-deps /opt/sregym-appkit" in text, dockerfile
