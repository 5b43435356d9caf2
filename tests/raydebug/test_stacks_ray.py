"""issue 34's first Done-when on real Ray: four `ActorGroup:<r>` ranks hang, rank 2 elsewhere (the demo workload's
`hang:2` fault); `rlark stacks` names it and its frame with profiling off (py-spy in the Pod, also under
--readonly) and on (Ray's /worker/traceback, the head started with RAY_DASHBOARD_ENABLE_PROFILING=1 as a debuggable
Job's is; both Jobs run at once, made with the SIGSEGV run: tests/raydebug/conftest.py). The progress-stalled alert's stacks (item 2) are tests/sandbox/test_stall_stacks.py's,
on these runs' recorded dumps."""

from __future__ import annotations

import json

import pytest

from tests.agent.helpers import wait_for
from tests.clirun import cli_runner
from tests.raydebug.faulty import HANG, PROFILED

pytestmark = pytest.mark.ray


@pytest.fixture
def hung(live_runs):
    return live_runs


def _stacks(rlark, name: str = HANG) -> dict | None:
    done = rlark("--readonly", "stacks", name, "-o", "json")
    return json.loads(done.out) if done.code == 0 else None


def _first_step(sandbox, name: str) -> None:
    wait_for(lambda: any("Global Step:    1/50" in line for line in sandbox.logs.read(
        "rlark-gpu-a", "rlark-system", f"{name}-actor-0", "main")), timeout=240, what=f"{name}'s first step")


def test_stacks_names_the_rank_that_never_reaches_the_collective(hung, capsys):
    rlark = cli_runner(hung.kubeconfig, capsys)
    _first_step(hung, HANG)

    def settled():  # the four ranks in the second step: three in one place, one elsewhere
        answer = _stacks(rlark)
        counts = [g["count"] for g in answer["groups"]] if answer else []
        return answer if counts == [3, 1] else None

    found = wait_for(settled, timeout=60, interval=1, what="four hung ranks")
    assert found["source"] == "py-spy", found
    assert [o["name"] for o in found["outliers"]] == ["ActorGroup:2"], found
    assert found["outliers"][0]["frame"].startswith("next_batch ("), found
    assert found["groups"][0]["count"] == 3 and any(f.startswith("allreduce (") for f in found["groups"][0]["frames"])
    assert {w["pod"] for w in found["groups"][0]["workers"]} == {f"{HANG}-actor-0"}
    text = rlark("stacks", HANG)
    assert "ActorGroup:2 is elsewhere: next_batch (demo_workload.py:" in text.out
    assert "3 ranks wait in allreduce" in text.out


def test_with_profiling_on_the_stacks_come_from_rays_own_route(hung, capsys):
    rlark = cli_runner(hung.kubeconfig, capsys)
    _first_step(hung, PROFILED)

    def settled():
        answer = _stacks(rlark, PROFILED)
        return answer if answer and [g["count"] for g in answer["groups"]] == [3, 1] else None

    found = wait_for(settled, timeout=60, interval=1, what="four hung ranks through Ray's /worker/traceback")
    assert found["source"] == "ray-dashboard", found
    assert [o["name"] for o in found["outliers"]] == ["ActorGroup:2"], found
    assert found["outliers"][0]["frame"].startswith("next_batch ("), found
