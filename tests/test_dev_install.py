"""tools/dev_install.py skips a second install only while nothing it installs from has changed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("dev_install", ROOT / "tools" / "dev_install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _package(base: Path, name: str, body: str) -> Path:
    path = base / name
    path.mkdir()
    (path / "pyproject.toml").write_text(body)
    return path


def test_the_stamp_changes_with_any_pyproject_or_extra_and_not_otherwise(tmp_path):
    tool = _tool()
    a = _package(tmp_path, "a", "[project]\nname = 'a'\n")
    b = _package(tmp_path, "b", "[project]\nname = 'b'\n")
    first = tool.install_stamp([a, b])
    assert tool.install_stamp([a, b]) == first
    (a / "module.py").write_text("x = 1\n")  # a source change: editable installs import it as it is
    assert tool.install_stamp([a, b]) == first
    (b / "pyproject.toml").write_text("[project]\nname = 'b'\ndependencies = ['attrs']\n")
    assert tool.install_stamp([a, b]) != first
    with_extra = tool.install_stamp([a, b])
    (b / "pyproject.toml").write_text("[project]\nname = 'b'\ndependencies = ['attrs']\n"
                                      "[project.optional-dependencies]\ntest = [\n  'pytest',\n]\n")
    assert tool.extras_for(b) == "[test]" and tool.install_stamp([a, b]) != with_extra
    assert tool.install_stamp([a]) != tool.install_stamp([a, b])  # a package added or removed


def test_a_matching_stamp_skips_the_install_and_a_missing_one_does_not(tmp_path, monkeypatch, capsys):
    tool = _tool()
    venv_dir = tmp_path / "venv"
    (venv_dir / "bin").mkdir(parents=True)
    (venv_dir / "bin" / "python").symlink_to(sys.executable)
    calls = []
    monkeypatch.setattr(tool.subprocess, "call", lambda command: calls.append(command) or 0)
    monkeypatch.setattr(sys, "argv", ["dev_install.py", "--venv", str(venv_dir)])

    def installs() -> int:  # pip runs that install the packages (each follows one of their build requirements)
        return sum("-e" in command for command in calls)

    assert tool.main() == 0 and installs() == 1  # no stamp yet: pip runs, and the stamp is written
    assert (venv_dir / tool.STAMP).is_file()
    assert tool.main() == 0 and installs() == 1  # nothing changed: skipped
    assert "already installed" in capsys.readouterr().out
    monkeypatch.setattr(sys, "argv", ["dev_install.py", "--venv", str(venv_dir), "--force"])
    assert tool.main() == 0 and installs() == 2
    monkeypatch.setattr(tool.subprocess, "call", lambda command: calls.append(command) or 1)
    monkeypatch.setattr(sys, "argv", ["dev_install.py", "--venv", str(venv_dir), "--force"])
    assert tool.main() == 1 and not (venv_dir / tool.STAMP).exists()  # a failed install is not taken as done


def test_the_packages_are_built_without_isolation_after_their_build_requirements(tmp_path, monkeypatch):
    tool = _tool()
    a = _package(tmp_path, "a", "[build-system]\nrequires = ['setuptools>=68']\n[project]\nname = 'a'\n")
    b = _package(tmp_path, "b", "[build-system]\nrequires = ['setuptools>=68', 'cython']\n[project]\nname = 'b'\n")
    assert tool.build_requirements([a, b]) == ["cython", "setuptools>=68", "wheel"]
    venv_dir = tmp_path / "venv"
    (venv_dir / "bin").mkdir(parents=True)
    (venv_dir / "bin" / "python").symlink_to(sys.executable)
    calls = []
    monkeypatch.setattr(tool.subprocess, "call", lambda command: calls.append(command) or 0)
    monkeypatch.setattr(tool, "packages", lambda: [a, b])
    monkeypatch.setattr(sys, "argv", ["dev_install.py", "--venv", str(venv_dir)])
    assert tool.main() == 0
    fetch_uv, requirements, packages = calls
    assert fetch_uv[-1] == tool.UV  # uv could not be had here (the call is a fake): pip installs
    assert requirements[-3:] == ["cython", "setuptools>=68", "wheel"] and "-e" not in requirements
    assert "--no-build-isolation" in packages and packages[-2:] == ["-e", str(b)]


def test_uv_installs_with_every_release_pinned_and_pip_does_where_uv_cannot(tmp_path, monkeypatch, capsys):
    tool = _tool()
    a = _package(tmp_path, "a", "[build-system]\nrequires = ['setuptools>=68']\n[project]\nname = 'a'\n")
    venv_dir = tmp_path / "venv"
    (venv_dir / "bin").mkdir(parents=True)
    (venv_dir / "bin" / "python").symlink_to(sys.executable)
    calls = []

    def fake_call(command):  # pip installing uv puts its binary into the environment, as the real one does
        calls.append(command)
        if command[-1] == tool.UV:
            (venv_dir / "bin" / "uv").write_text("")
        return 0

    monkeypatch.setattr(tool.subprocess, "call", fake_call)
    monkeypatch.setattr(tool, "packages", lambda: [a])
    monkeypatch.setattr(sys, "argv", ["dev_install.py", "--venv", str(venv_dir)])
    assert tool.main() == 0
    fetch_uv, requirements, packages = calls
    assert fetch_uv[1:4] == ["-m", "pip", "install"]
    for command in (requirements, packages):
        assert command[:3] == [str(venv_dir / "bin" / "uv"), "pip", "install"]
        assert command[command.index("--python") + 1] == str(venv_dir / "bin" / "python")
        assert command[command.index("-c") + 1] == str(tool.CONSTRAINTS)
    # the pins are the checkout's: every line a release of a third-party package, none of ours
    pins = [line for line in tool.CONSTRAINTS.read_text().splitlines() if line and not line.startswith("#")]
    assert pins and all("==" in line for line in pins)
    assert not any(line.lower().startswith(("sregym", "uv==")) for line in pins)
    # without uv (it could not be installed), pip installs, with the same pins
    (venv_dir / "bin" / "uv").unlink()
    monkeypatch.setattr(tool.subprocess, "call", lambda command: calls.append(command) or 0)
    monkeypatch.setattr(sys, "argv", ["dev_install.py", "--venv", str(venv_dir), "--force"])
    del calls[:]
    assert tool.main() == 0
    assert all(command[1:4] == ["-m", "pip", "install"] for command in calls)
    assert str(tool.CONSTRAINTS) in calls[-1] and "uv could not be installed" in capsys.readouterr().err
