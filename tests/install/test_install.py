"""The light install: the console core without the [sandbox] extra, and a built wheel installed without `-e`.
Each case runs tests/install/console_probe.py in a child process with `ray` and `aiohttp` blocked."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("console_probe.py")
SOURCES = ("pyproject.toml", "README.md", "rlark_tui", "rlark_sandbox", "styles")


def probe(*argv: str, pythonpath: str | None = None, cwd: Path = REPO) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run([sys.executable, str(PROBE), *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def source_files() -> list[Path]:
    files = []
    for name in SOURCES:
        path = REPO / name
        files += [path] if path.is_file() else sorted(p for p in path.rglob("*")
                                                      if p.is_file() and "__pycache__" not in p.parts)
    return files


@pytest.fixture(scope="session")
def wheel(request, tmp_path_factory) -> Path:
    """The wheel of the current sources, built once per change of them (cached in pytest's cache dir; built in the
    session's temporary directory when pytest runs with -p no:cacheprovider)."""
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    cache_provider = getattr(request.config, "cache", None)
    wheels = (Path(cache_provider.mkdir("rlark-wheel")) if cache_provider is not None
              else tmp_path_factory.mktemp("rlark-wheel"))
    cache = wheels / digest.hexdigest()[:16]
    built = sorted(cache.glob("rlark_tui-*.whl"))
    if not built:
        tree = tmp_path_factory.mktemp("wheel-src")
        for name in SOURCES:
            copy = shutil.copy2 if (REPO / name).is_file() else shutil.copytree
            copy(REPO / name, tree / name, **({} if (REPO / name).is_file()
                                               else {"ignore": shutil.ignore_patterns("__pycache__")}))
        # uv's isolated build (the build-system's setuptools, from its cache): pip wheel made a virtualenv and
        # installed setuptools into it first, 3.8 s of CPU (18.7 s of a CI worker's wall) to uv's 1.3 s
        subprocess.run([sys.executable, "-m", "uv", "build", "-q", "--wheel", "-o", str(cache), str(tree)],
                       check=True, capture_output=True, timeout=300)
        built = sorted(cache.glob("rlark_tui-*.whl"))
    return built[-1]


def test_console_core_imports_no_sandbox_package_and_sandbox_commands_name_the_extra(sandbox):
    report = probe("tui", str(sandbox.kubeconfig), "demo-ppo")
    assert report["blocked_loaded"] == []
    assert "rlark_tui.tui.app" in report["modules"] and "rlark_tui.commands.get" in report["modules"]
    assert {"get", "logs", "check", "sandbox", "demo"} <= set(report["commands"])
    assert report["shown"], "the Job list did not show demo-ppo"
    for command in ("sandbox", "demo"):
        result = probe("cli", command)
        assert result["code"] == 2
        assert result["stderr"].splitlines() == [
            f"error: rlark {command} needs the sandbox extra (aiohttp, ray not installed): "
            "pip install 'rlark-tui[sandbox]'"]


def test_wheel_ships_styles_and_scripts_and_runs_installed_without_editable(wheel, sandbox, tmp_path):
    names = set(zipfile.ZipFile(wheel).namelist())
    for tcss in (REPO / "styles").glob("*.tcss"):
        assert f"rlark_tui/styles/{tcss.name}" in names
    for script in (REPO / "rlark_sandbox/scripts").iterdir():
        if script.suffix in (".sh", ".py"):
            assert f"rlark_sandbox/scripts/{script.name}" in names
    packages = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    in_tree = {str(p.parent.relative_to(REPO)).replace("/", ".")
               for top in ("rlark_tui", "rlark_sandbox") for p in (REPO / top).rglob("__init__.py")}
    assert in_tree | {"rlark_sandbox.scripts", "rlark_tui.styles"} == set(packages), \
        "pyproject.toml's package list and the source tree differ"

    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    report = probe("tui", str(sandbox.kubeconfig), "demo-ppo", pythonpath=str(target), cwd=tmp_path)
    assert Path(report["package"]).is_relative_to(target)
    assert report["stylesheets"] and all(Path(css).is_relative_to(target / "rlark_tui" / "styles")
                                         for css in report["stylesheets"])
    assert report["header_dock"] == "top", "app.tcss was not applied"
    assert report["shown"] and report["blocked_loaded"] == []

    helped = subprocess.run([str(target / "bin" / "rlark"), "--help"], cwd=tmp_path, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(target)), timeout=60)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: rlark") and "submit" in helped.stdout
