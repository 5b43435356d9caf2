"""The job list's REASON read (cluster/podhealth.pods_health) against the sandbox over HTTPS: one pod list per
data plane through rlark-server, restart counts and reasons per Pod CR, a data plane that does not answer left
out."""

from __future__ import annotations

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.podhealth import pods_health
from rlark_tui.model.objects import Pod
from rlark_tui.model.podstate import PodHealth
from tests.cluster.seeding import ROLES, seed_running_job


def test_one_list_per_data_plane_gives_every_pods_health(sb, env):
    seed_running_job(sb, "ph-1", ROLES)
    sb.store.mutate("pods", "ph-1-env-0", lambda p: {**p, "status": {**p["status"], "containerStatuses": [
        {"name": "main", "restartCount": 1, "ready": False, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
         "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}},
        namespace="rlark-system", plane="rlark-edge-b")
    access = ClusterAccess.open(str(sb.kubeconfig), sb.context)
    try:
        pods = [Pod(p) for ns in ("rlark-gpu-a", "rlark-edge-b") for p in sb.store.list("pods", namespace=ns)[0]
                if p["spec"].get("taskName", "").startswith("ph-1-")]
        health = pods_health(access, pods)
        by_task = {pod.task_name: health.get(f"{pod.namespace}/{pod.name}") for pod in pods}
        assert by_task == {"ph-1-actor": PodHealth(2, ""),
                           "ph-1-env": PodHealth(1, "CrashLoopBackOff, OOMKilled (exit 137)")}
        with sb.faults.cleared() as faults:
            faults.agent_offline("edge-b", on=True)
            health = pods_health(access, pods)
        assert {key.split("/")[0] for key in health} == {"rlark-gpu-a"}
    finally:
        access.close()
