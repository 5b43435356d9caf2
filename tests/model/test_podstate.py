"""Pod failure reasons from data-plane pods as a kubelet writes them (pure)."""

from __future__ import annotations

import pytest

from rlark_tui.model.podstate import failure_reason


def _pod(status: dict) -> dict:
    return {"status": {"containerStatuses": [{"name": "sidecar", "state": {"waiting": {"reason": "Ignored"}}},
                                             dict(status, name="main")]}}


@pytest.mark.parametrize("status, events, expected", [
    ({"restartCount": 0, "state": {"running": {}}}, [], ""),
    ({"restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
      "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}},
     [{"type": "Warning", "reason": "BackOff"}], "CrashLoopBackOff, OOMKilled (exit 137)"),
    ({"restartCount": 1, "state": {"running": {}}, "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}},
     [], "Error (exit 1)"),
    ({"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}, [], ""),
    ({"state": {"terminated": {"exitCode": 3}}}, [], "exited (exit 3)"),
    ({"state": {"waiting": {"reason": "ContainerCreating"}}},
     [{"type": "Warning", "reason": "FailedMount"}, {"type": "Normal", "reason": "Pulled"}], "FailedMount"),
    ({"state": {"running": {}}}, [{"type": "Warning", "reason": "Unhealthy"}, "not an event"], "Unhealthy"),
    ({"state": {"terminated": {"exitCode": "137"}}, "restartCount": "x"}, [], ""),
])
def test_failure_reason(status, events, expected):
    assert failure_reason(_pod(status), events) == expected


def test_no_main_container_has_no_reason_but_its_events():
    assert failure_reason({"status": {}}, [{"type": "Warning", "reason": "FailedMount"}]) == "FailedMount"
    assert failure_reason(None) == ""


def test_a_pod_the_scheduler_cannot_place_says_why():
    pod = {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/2 nodes are available: 1 Insufficient nvidia.com/gpu."}]}}
    assert failure_reason(pod) == "Unschedulable: 0/2 nodes are available: 1 Insufficient nvidia.com/gpu"
    pod["status"]["conditions"][0]["status"] = "True"
    assert failure_reason(pod) == ""


@pytest.mark.parametrize("conditions", [5, 1.5, True, "PodScheduled", {"type": "PodScheduled"}, [5, None, "x"]])
def test_a_pod_whose_conditions_have_the_wrong_shape_has_no_reason_and_raises_nothing(conditions):
    """Issue 33, a twentieth round (generated answers through a mutating proxy; found by the TUI's Workers tab), a
    hostile data plane: a pod's status.conditions that was a number raised TypeError (`dig(...) or []` iterated
    it), so the Job detail's Pod health read ended in asyncio's traceback and showed no reason for any Pod of the
    Job. Conditions that are no list are none."""
    pod = {"status": {"phase": "Pending", "conditions": conditions}}
    assert failure_reason(pod) == ""
