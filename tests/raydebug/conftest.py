"""The live Ray runs of issue 34's tests, made at once so that each Ray start follows the one before with no test
between them (the sandbox starts Ray nodes one at a time: rlark_sandbox/scripts/pod_common.sh; the issue's "keep
live Ray runs few"): the run whose rank 1 dies of SIGSEGV (test_diagnose_ray.py: wait, diagnose, bundle, diagnose after the stop)
and the two runs whose rank 2 hangs, profiling off and on (test_stacks_ray.py). Only the runs of the modules the
session selected are made (tests/raydebug/faulty.py's RUNS); all are deleted at once at its end."""

from __future__ import annotations

import pytest

from tests.raydebug.faulty import RUNS, faulty_job, faulty_jobs


@pytest.fixture(scope="session")
def live_runs(ray_sandbox, tmp_path_factory, request):
    selected = {item.path.name for item in request.session.items}
    jobs = {name: faulty_job(name, tmp_path_factory.mktemp(name), ranks, fault, env)
            for name, (reader, ranks, fault, env) in RUNS.items() if reader in selected}
    with faulty_jobs(ray_sandbox, jobs):
        yield ray_sandbox
