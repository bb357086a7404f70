"""appkit runs inside the app images: no sregym_core, and no dependency an image does not install."""

from __future__ import annotations

import json
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
IMAGE_MODULES = ("admin", "cli", "flagd", "httpclient", "httpserver", "logs", "manifests", "metrics", "objects",
                 "postgres", "service", "stats", "tracing", "workload")
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


def _requirements(path: Path) -> set[str]:
    """The packages a pip requirements file names, following its ``-r`` includes."""
    names: set[str] = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            names |= _requirements(path.parent / line[3:].strip())
        elif line:
            names.add(_name(line))
    return names


def _build_lines(readme: Path) -> list[str]:
    """The ``docker build`` commands of a README (its lines joined where they end in a backslash)."""
    text = readme.read_text().replace("\\\n", " ")
    return [" ".join(line.split()) for line in text.splitlines() if line.strip().startswith("docker build ")]


def test_the_kits_dockerfile_installs_the_kit_and_the_apps_requirements():
    """One Dockerfile builds every app's image: the kit copied and installed with the app, both without
    their dependencies (no sregym-core in an image), then the app's requirements file."""
    text = (LIB / "Dockerfile").read_text()
    assert "COPY libs/sregym-appkit /opt/sregym-appkit" in text and "--no-deps /opt/sregym-appkit ." in text
    assert 'pip install --no-cache-dir -r "${REQUIREMENTS}"' in text
    assert "ARG REQUIREMENTS=image-requirements.txt" in text
    assert 'ENTRYPOINT ["/bin/sh", "/opt/sregym-appkit/image/entrypoint.sh"]' in text
    assert (LIB / "image" / "entrypoint.sh").is_file()
    assert not sorted(REPO.glob("apps/*/Dockerfile")), "an app builds its image with libs/sregym-appkit/Dockerfile"


def test_each_app_image_that_uses_appkit_installs_it_and_its_dependencies():
    deps = {_name(d) for d in tomllib.loads((LIB / "pyproject.toml").read_text())["project"]["dependencies"]}
    users = [d for d in sorted(REPO.glob("apps/*/pyproject.toml"))
             if "sregym-appkit" in {_name(r) for r in tomllib.loads(d.read_text())["project"]["dependencies"]}]
    assert {d.parent.name for d in users} >= {"sregym-app-hotel-reservation", "sregym-app-social-network",
                                              "sregym-app-astronomy-shop", "sregym-app-train-ticket",
                                              "sregym-app-fleetcast"}
    for pyproject in users:
        app = pyproject.parent
        # the template's line names the folder its copy will have (its project's name)
        folder = tomllib.loads(pyproject.read_text())["project"]["name"] if app.name == "_template" else app.name
        lines = _build_lines(app / "README.md")
        assert lines, f"{app.name}/README.md documents no docker build line"
        for line in lines:
            assert f"-f libs/sregym-appkit/Dockerfile --build-arg APP={folder} " in line and line.endswith(" ."), line
            requirements = re.search(r"--build-arg REQUIREMENTS=(\S+)", line)
            installed = _requirements(app / (requirements.group(1) if requirements else "image-requirements.txt"))
            assert deps <= installed, f"{app.name} ({line}): appkit needs {sorted(deps - installed)}"
            assert "sregym-core" not in installed and "sregym-appkit" not in installed, line


@pytest.mark.parametrize(("service", "args", "argv"), [
    ("frontend", [], ["frontend"]), ("frontend", ["geo", "-v"], ["geo", "-v"]), ("", [], [])])
def test_the_image_entry_point_runs_the_module_with_the_pods_args_or_the_default_service(tmp_path, service, args, argv):
    """``python -m <module> <args>``, the image's default service when a container gives no args (none
    when the build named none, as the FleetCast operator's), exec'd: python is the container's process."""
    (tmp_path / "shows_argv.py").write_text("import os, sys, json; print(json.dumps([sys.argv[1:], os.getpid()]))")
    entry = tmp_path / "entry"
    entry.write_text(f"shows_argv\n{service}\n")
    script = tmp_path / "entrypoint.sh"
    script.write_text((LIB / "image" / "entrypoint.sh").read_text().replace("/etc/sregym-app-entry", str(entry)))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").symlink_to(sys.executable)
    proc = subprocess.Popen(["sh", str(script), *args], stdout=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={"PATH": f"{bindir}:/usr/bin:/bin", "PYTHONPATH": str(tmp_path)})
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert json.loads(out) == [argv, proc.pid]
