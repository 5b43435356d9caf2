"""Restarting `rlark sandbox` on the same --state-dir keeps every Job: three Jobs submitted with `rlark submit`,
SIGTERM (or SIGKILL: a crash), start again; `rlark get jobs` lists the seeded Job and the three, with the same
uid, spec and submitted-spec record, and the seed is not applied a second time.

The sandbox runs as a real process (`python -m rlark_tui sandbox`), without the agent so nothing changes the
Jobs between the two runs; the CLI runs in-process against it.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rlark_sandbox.seed import demo_draft
from rlark_tui.cli import main

NAMES = ("restart-one", "restart-two", "restart-three")


def start(state: Path) -> tuple[subprocess.Popen, Path]:
    """The sandbox process and its kubeconfig, once it says it is ready."""
    proc = subprocess.Popen([sys.executable, "-m", "rlark_tui", "sandbox", "--state-dir", str(state),
                             "--seed", "demo", "--port", "0", "--no-agent"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"sandbox did not start: {line!r} {err[-2000:]}")
    kubeconfig = dict(part.split("=", 1) for part in line.split()[1:])["kubeconfig"]
    return proc, Path(kubeconfig)


def stop(proc: subprocess.Popen, how: signal.Signals = signal.SIGTERM) -> int:
    proc.send_signal(how)
    try:
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    return code


def rlark(kubeconfig: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--kubeconfig", str(kubeconfig), *argv])
    return code, out.getvalue(), err.getvalue()


def jobs(kubeconfig: Path) -> dict[str, dict]:
    code, out, err = rlark(kubeconfig, "get", "jobs", "-o", "json")
    assert code == 0, err
    return {item["metadata"]["name"]: item for item in json.loads(out)["items"]}


def kept(job: dict) -> dict:
    """What a restart must not change: identity, spec, and the submission record."""
    metadata = job["metadata"]
    return {"uid": metadata.get("uid"), "spec": job["spec"], "annotations": metadata.get("annotations"),
            "labels": metadata.get("labels"), "creationTimestamp": metadata.get("creationTimestamp")}


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_restart_on_the_same_state_dir_keeps_every_job(env, tmp_path, how):
    state = tmp_path / "sandbox-state"
    proc, kubeconfig = start(state)
    try:
        for name in NAMES:
            draft = tmp_path / f"{name}.yaml"
            draft.write_text(yaml.safe_dump({**demo_draft(str(tmp_path / "outputs")), "name": name}))
            code, out, err = rlark(kubeconfig, "submit", "-f", str(draft))
            assert code == 0 and f"job.rlinf.io/{name} created" in out, err
        before = jobs(kubeconfig)
    finally:
        first_exit = stop(proc, how)
    assert first_exit == (0 if how == signal.SIGTERM else -signal.SIGKILL)
    assert set(before) == {"demo-ppo", *NAMES}

    proc, kubeconfig = start(state)
    try:
        after = jobs(kubeconfig)
        code, table, _ = rlark(kubeconfig, "get", "jobs")
    finally:
        stop(proc)
    assert set(after) == set(before)
    assert {name: kept(job) for name, job in after.items()} == {name: kept(job) for name, job in before.items()}
    assert code == 0 and all(name in table for name in NAMES)
