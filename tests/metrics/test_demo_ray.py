"""The issue's Done-when lines on the shared Ray sandbox's demo-ppo (one live run): TensorBoard behind the
gateway lists real tags, `rlark metrics` gives a growing reward series from TensorBoard and from the log with the
Pod's TensorBoard stopped, and `get jobs -o wide` shows its progress."""

from __future__ import annotations

import json
import time

import pytest

from tests.clirun import cli_runner
from tests.sandbox.helpers import raw

JOB = "demo-ppo"


@pytest.mark.ray
def test_demo_metrics_and_progress(sandbox, env, capsys):
    rlark = cli_runner(sandbox.kubeconfig, capsys)
    deadline = time.monotonic() + 300
    wide = None
    while time.monotonic() < deadline:
        wide = rlark("get", "jobs", "-o", "wide")
        row = next((line for line in wide.out.splitlines() if line.startswith(JOB + " ")), "")
        if "/40 " in row:
            break
        time.sleep(3)
    assert "/40 " in row and "%" in row, wide

    tags = raw(sandbox, "GET", f"/api/v1/rlinf.io/v1alpha1/tasks/{JOB}-actor/tensorboard/data/plugin/scalars/tags",
               timeout=90)
    assert tags.status == 200 and "rollout/rewards" in tags.json()["."]

    result = rlark("metrics", JOB, "--format", "json", "--tag", "rollout/rewards")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    steps = [point[1] for point in data["series"]["rollout/rewards"]]
    assert data["source"] == "tensorboard" and steps == sorted(steps) and len(set(steps)) == len(steps) >= 1

    with sandbox.faults.cleared() as faults:
        faults.stop_tensorboard(f"{JOB}-actor-0")
        fallback = rlark("metrics", JOB, "--format", "json", "--tag", "rollout/rewards")
    assert fallback.code == 0, fallback.err
    data = json.loads(fallback.out)
    assert data["source"] == "log" and data["series"]["rollout/rewards"][-1][1] >= steps[-1]
