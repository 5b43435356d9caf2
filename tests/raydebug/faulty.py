"""Live-Ray Jobs of the demo workload with `ActorGroup:<r>` ranks and one of its faults set by env
(`RLARK_DEMO_FAULT`: `hang:<r>` or `sigsegv:<r>`; tests/raydebug/recorded.py says how the recorded OOM runs were
made), made in the Ray sandbox together and deleted together afterwards."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.agent.helpers import Api, job, task, wait_for


def faulty_job(name: str, output: Path, ranks: int, fault: str, env: tuple[dict, ...] = ()) -> dict:
    """The Job: one Header Pod (one Ray node holds every rank) running the demo workload. `env`: more env of the
    Header's container (e.g. RAY_DASHBOARD_ENABLE_PROFILING, as a debuggable Job has)."""
    header = task("actor", "gpu-a3", head=True,
                  run=f"python -m rlark_sandbox.demo_workload --run-id {name} --code-ref x --output {output} "
                      "--steps 50 --step-seconds 0.2")
    faulty = [{"name": "RLARK_DEMO_RANKS", "value": str(ranks)}, {"name": "RLARK_DEMO_FAULT", "value": fault}]
    header["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"] += [*faulty, *env]
    return job(name, [header])


@contextmanager
def faulty_jobs(sandbox, jobs: Mapping[str, dict]) -> Iterator[None]:
    """The Jobs (name: faulty_job's manifest) made at once; at the end all are deleted at once (each Job's Pods
    end in parallel in the agent) and waited for until their Tasks are gone (at most 60 s for all)."""
    api = Api(sandbox)
    made: list[str] = []
    try:
        for name, manifest in jobs.items():
            api.create_job(manifest)
            made.append(name)
        yield
    finally:
        for name in made:
            api.delete_job(name)
        wait_for(lambda: not any(api.tasks(name) for name in made), 60, what=f"tasks of {made} deleted")


SEGV = "diagnose-segv"
HF_TOKEN = "zqSegvHf0123"
"""The SIGSEGV run's secret env value, searched for in every member of its bundle."""
HANG = "stacks-hang"
PROFILED = "stacks-hang-profiled"
RUNS = {  # name: (the test file that reads it, its ranks, the fault, more env of the Header)
    SEGV: ("test_diagnose_ray.py", 2, "sigsegv:1", ({"name": "HF_TOKEN", "value": HF_TOKEN},)),
    HANG: ("test_stacks_ray.py", 4, "hang:2", ()),
    PROFILED: ("test_stacks_ray.py", 4, "hang:2", ({"name": "RAY_DASHBOARD_ENABLE_PROFILING", "value": "1"},)),
}
"""The SIGSEGV run has two ranks (rank 1 dies; each rank is a Ray worker process to start, twice when the Header
restarts after the crash), the hung runs the four of issue 34's Done-when."""
