"""A Job on the shared sandbox whose Pods really run their prepare script (the sandbox's agent, no Ray), for tests
of what rlark shows of text a Pod writes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from tests.agent.helpers import IMAGE

CLUSTER = "rlark-edge-b"


def edge_task(name: str, host: str, script: str, env: list[dict], image: str = IMAGE, head: bool = False) -> dict:
    """A one-Pod role on an edge node (no GPU) running `script` as its prepare script."""
    return {"name": name, "head": head, "role": "Actor" if head else "Env", "agentType": "Kubernetes",
            "nodeSelector": {"kubernetes.io/hostname": host}, "prepareScript": script,
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {
                "containers": [{"name": "main", "image": image, "env": env}]}}}}}


def pod_log_text(access: ClusterAccess, pod: str) -> str:
    try:
        return "\n".join(access.pod_log(CLUSTER, pod, timestamps=False))
    except Exception:  # not scheduled yet
        return ""


@contextlib.contextmanager
def running_job(sandbox, manifest: dict, printed: dict[str, str]) -> Iterator[None]:
    """Create the Job, wait until each Pod named in `printed` has logged its text, delete the Job at the end."""
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    name = manifest["metadata"]["name"]
    access.create(JOBS, manifest)
    try:
        deadline = time.monotonic() + 60

        def done() -> bool:
            return all(text in pod_log_text(access, pod) for pod, text in printed.items())

        while not done() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert done(), f"the Pods of {name} did not print {printed}"
        yield
    finally:
        try:
            access.delete(JOBS, name)
        except NotFound:
            pass
        access.close()
