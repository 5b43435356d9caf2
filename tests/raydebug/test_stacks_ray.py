"""issue 34's first Done-when on real Ray: four `ActorGroup:<r>` ranks hang, rank 2 elsewhere (the demo workload's
`hang:2` fault); `rlark stacks` names it and its frame with profiling off (py-spy in the Pod, also under
--readonly)."""

from __future__ import annotations

import json

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
