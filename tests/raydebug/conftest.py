"""The live Ray runs of issue 34's tests, made at once so their Ray starts overlap (the issue's "keep live Ray runs
few"): the run whose rank 1 dies of SIGSEGV (test_diagnose_ray.py: wait, diagnose, bundle, diagnose after the stop)
and the two runs whose rank 2 hangs, profiling off and on (test_stacks_ray.py). Only the runs of the modules the
session selected are made (tests/raydebug/faulty.py's RUNS); all are deleted at its end."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from tests.raydebug.faulty import RUNS, faulty_job


@pytest.fixture(scope="session")
def live_runs(ray_sandbox, tmp_path_factory, request):
    selected = {item.path.name for item in request.session.items}
    with ExitStack() as stack:
        for name, (reader, fault, env) in RUNS.items():
            if reader in selected:
                stack.enter_context(faulty_job(ray_sandbox, tmp_path_factory.mktemp(name), name, fault, env))
        yield ray_sandbox
