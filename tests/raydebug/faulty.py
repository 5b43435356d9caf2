"""A live-Ray Job of the demo workload with four `ActorGroup:<r>` ranks and one of its faults set by env
(`RLARK_DEMO_FAULT`: `hang:<r>`, `sigsegv:<r>`, `cudaoom:<r>` or `hostoom:<r>`), made in the Ray sandbox and deleted
afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.agent.helpers import Api, delete_and_wait, job, task


@contextmanager
def faulty_job(sandbox, output: Path, name: str, fault: str, env: tuple[dict, ...] = (),
               worker_memory: str = "") -> Iterator[None]:
    """`env`: more env of the Header's container (e.g. RAY_DASHBOARD_ENABLE_PROFILING, as a debuggable Job has).
    `worker_memory`: a second Ray node, a `rollout` Pod on gpu-a2 with that memory limit, carrying the fault's env
    (its ranks run there): ranks 1 and 3 run on it, 0 and 2 beside the driver."""
    header = task("actor", "gpu-a3", head=True,
                  run=f"python -m rlark_sandbox.demo_workload --run-id {name} --code-ref x --output {output} "
                      "--steps 50 --step-seconds 0.2")
    faulty = [{"name": "RLARK_DEMO_RANKS", "value": "4"}, {"name": "RLARK_DEMO_FAULT", "value": fault}]
    header["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"] += [*faulty, *env]
    tasks = [header]
    if worker_memory:
        worker = task("rollout", "gpu-a2")
        container = worker["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
        container["env"] += faulty
        container["resources"] = {"limits": {"memory": worker_memory}}
        tasks.append(worker)
    api = Api(sandbox)
    api.create_job(job(name, tasks))
    try:
        yield
    finally:
        delete_and_wait(api, name)
