"""issue 34's first Done-when on real Ray: four `ActorGroup:<r>` ranks hang, rank 2 elsewhere (the demo workload's
`hang:2` fault); `rlark stacks` names it and its frame with profiling off (py-spy in the Pod, also under
--readonly), and so does the progress-stalled alert of the alert rounds (item 2)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time

import pytest

from tests.agent.helpers import wait_for
from tests.clirun import cli_runner
from tests.raydebug.faulty import faulty_job

pytestmark = pytest.mark.ray
HANG = "stacks-hang"


@pytest.fixture(scope="module")
def hung(ray_sandbox, tmp_path_factory):
    with faulty_job(ray_sandbox, tmp_path_factory.mktemp("hang"), HANG, "hang:2"):
        yield ray_sandbox


def _stacks(rlark) -> dict | None:
    done = rlark("--readonly", "stacks", HANG, "-o", "json")
    return json.loads(done.out) if done.code == 0 else None


def test_stacks_names_the_rank_that_never_reaches_the_collective(hung, capsys):
    rlark = cli_runner(hung.kubeconfig, capsys)
    wait_for(lambda: any("Global Step:    1/50" in line for line in hung.logs.read(
        "rlark-gpu-a", "rlark-system", f"{HANG}-actor-0", "main")), timeout=240, what="the run's first step")

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


async def test_the_stall_alert_names_the_rank_that_never_reaches_the_collective(hung):
    from rlark_tui.alerting.thresholds import Thresholds
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.flow.alertpoll import ALERTS
    from rlark_tui.flow.reconciler import Reconciler

    access = ClusterAccess.open(str(hung.kubeconfig), hung.context)
    access.config = dataclasses.replace(access.config, alerts=Thresholds(stall_min_seconds=5, stall_factor=1))
    reconciler = Reconciler(access)
    running = asyncio.create_task(reconciler.run(lambda _published: None))

    def alert():
        state = reconciler.snapshot.alerts.get(HANG)
        return state.book.alerts.get((HANG, "progress-stalled", HANG)) if state is not None else None

    try:
        reconciler.subscribe(ALERTS, HANG)
        deadline = time.monotonic() + 240
        while alert() is None:
            assert time.monotonic() < deadline, "no progress-stalled alert"
            await asyncio.sleep(0.1)
        message = alert().message
        assert "at step 1/50; stacks: ActorGroup:2 is elsewhere: next_batch (demo_workload.py:" in message, message
        assert message.endswith("3 ranks wait in allreduce"), message
    finally:
        reconciler.stop()
        await asyncio.wait_for(running, 10)
        access.close()
