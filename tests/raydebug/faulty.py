"""A live-Ray Job of the demo workload with four `ActorGroup:<r>` ranks and one of its faults set by env
(`RLARK_DEMO_FAULT`: `hang:<r>` or `sigsegv:<r>`; tests/raydebug/recorded.py says how the recorded OOM runs were
made), made in the Ray sandbox and deleted afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.agent.helpers import Api, delete_and_wait, job, task


@contextmanager
def faulty_job(sandbox, output: Path, name: str, fault: str, env: tuple[dict, ...] = ()) -> Iterator[None]:
    """`env`: more env of the Header's container (e.g. RAY_DASHBOARD_ENABLE_PROFILING, as a debuggable Job has)."""
    header = task("actor", "gpu-a3", head=True,
                  run=f"python -m rlark_sandbox.demo_workload --run-id {name} --code-ref x --output {output} "
                      "--steps 50 --step-seconds 0.2")
    faulty = [{"name": "RLARK_DEMO_RANKS", "value": "4"}, {"name": "RLARK_DEMO_FAULT", "value": fault}]
    header["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"] += [*faulty, *env]
    api = Api(sandbox)
    api.create_job(job(name, [header]))
    try:
        yield
    finally:
        delete_and_wait(api, name)


SEGV = "diagnose-segv"
HF_TOKEN = "zqSegvHf0123"
"""The SIGSEGV run's secret env value, searched for in every member of its bundle."""
HANG = "stacks-hang"
PROFILED = "stacks-hang-profiled"
RUNS = {  # name: (the test file that reads it, the fault, more env of the Header)
    SEGV: ("test_diagnose_ray.py", "sigsegv:1", ({"name": "HF_TOKEN", "value": HF_TOKEN},)),
    HANG: ("test_stacks_ray.py", "hang:2", ()),
    PROFILED: ("test_stacks_ray.py", "hang:2", ({"name": "RAY_DASHBOARD_ENABLE_PROFILING", "value": "1"},)),
}
