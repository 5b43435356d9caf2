"""issue 34's second Done-when on real Ray: two `ActorGroup:<r>` ranks, rank 1 killed by SIGSEGV after the first
step (the demo workload's `sigsegv:1` fault; the driver prints the crash chain and exits, the Header container
restarts and Ray starts afresh). `rlark wait --for phase=Succeeded` exits 1 within 60 s of the crash, with the
alert and the first failure; `rlark diagnose`, read once, names ActorGroup:1 and `signal` and quotes Python's fatal
error from the rank's own stderr (Ray's log API serves it only until the Header container exits, about a second
after the crash; Ray also forwarded it into the Header log, which the kubelet keeps); `rlark bundle` of the crashed
run holds Ray's facts and the rank's stderr, opens as `rlark --bundle` reads it, with the same first failure, and
no member holds the Job's secret env value or its Ray token; once the Job is stopped diagnose answers the same from
the evidence it kept."""

from __future__ import annotations

import base64
import json
import stat
import tarfile
import threading
import time
from datetime import datetime

import pytest

from rlark_tui.cluster.bundle_source import BundleAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.telemetry import bundle as layout
from tests.agent.helpers import Api, wait_for
from tests.clirun import cli_runner
from tests.raydebug.faulty import HF_TOKEN, SEGV

pytestmark = pytest.mark.ray
FATAL = "Fatal Python error: Segmentation fault"


@pytest.fixture
def crashing(live_runs):
    return live_runs


def _first_crash(sandbox) -> float:
    """When the driver printed the crash chain, by the kubelet's timestamp (the Header may have restarted since)."""
    from rlark_sandbox.logs import LogsNotFound

    stamps = []
    for previous in (True, False):
        try:
            lines = sandbox.logs.read("rlark-gpu-a", "rlark-system", f"{SEGV}-actor-0", "main", previous=previous,
                                      timestamps=True)
        except LogsNotFound:
            continue
        stamps += [datetime.fromisoformat(line.split(" ", 1)[0][:26].rstrip("Z") + "+00:00").timestamp()
                   for line in lines if "A worker died during training" in line]
    assert stamps, "no crash line in the Header log"
    return min(stamps)


def _diagnose(rlark) -> dict:
    done = rlark("--readonly", "diagnose", SEGV, "-o", "json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def test_diagnose_names_the_rank_killed_by_sigsegv_and_keeps_it_past_the_stop(crashing, capsys, tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    rlark = cli_runner(crashing.kubeconfig, capsys)
    # the wait starts once Ray is up and the run printed its first step (a loaded machine can fail a Ray start,
    # and a wait during it rightly ends at that Pod's back-off)
    wait_for(lambda: any("Global Step:    1/50" in line for line in crashing.logs.read(
        "rlark-gpu-a", "rlark-system", f"{SEGV}-actor-0", "main")), timeout=600, interval=0.5,
        what="the run's first step")
    waited = rlark("wait", SEGV, "--for", "phase=Succeeded", "--timeout", "300s")
    ended = time.time()
    assert waited.code == 1, waited.err
    assert f"job {SEGV}: critical alert " in waited.err and "\nfirst failure: ActorGroup:1 failed first" in waited.err
    at = _first_crash(crashing)
    assert ended - at <= 60, (at, ended)

    # one read, whenever it comes: Ray serves the dead rank's stderr only until the Header container exits, about a
    # second after the crash, but Ray forwarded it into the Header log, which the kubelet keeps (previous container)
    found = _diagnose(rlark)
    failure = found["first_failure"]
    assert (failure["worker"], failure["pod"], failure["node"]) == ("ActorGroup:1", f"{SEGV}-actor-0", "gpu-a3")
    assert FATAL in failure["evidence"] and len(failure["evidence"]) <= 20
    assert any("in step" in line and "demo_workload.py" in line for line in failure["evidence"])
    assert failure["summary"].startswith(f"ActorGroup:1 failed first (signal): {FATAL}")
    kept = list((tmp_path / "state" / "diagnosis").glob("*/*"))
    assert [p.name for p in kept] == [f"{SEGV}.json"] and stat.S_IMODE(kept[0].stat().st_mode) == 0o600
    crashed = _bundle_opens_offline_without_secrets(crashing, rlark, tmp_path, "crashed.tar.gz")

    assert rlark("stop", SEGV, "--yes").code == 0
    api = Api(crashing)

    def gone():
        names = [t["metadata"]["name"] for t in api.tasks(SEGV)]
        return not names or not api.pod_crs(names)

    wait_for(gone, timeout=60, what="the stopped Job's Pods gone")
    again = rlark("--readonly", "diagnose", SEGV)
    assert again.code == 0, again.err
    assert again.out.startswith(f"first failure: ActorGroup:1 failed first (signal): {FATAL}")
    assert FATAL in again.out and "kept when it was first seen" in again.err
    # Ray no longer serves the rank's stderr: the bundle's member is the excerpt rlark kept, and says so
    stopped = _bundle_opens_offline_without_secrets(crashing, rlark, tmp_path, "stopped.tar.gz")
    kept = [path for path, member in stopped.items() if path.startswith("ray/stderr/") and member.get(
        "kept_by_rlark_at")]
    assert kept and set(kept) <= {path for path in crashed if path.startswith("ray/stderr/")}, (kept, crashed)


def _bundle_opens_offline_without_secrets(sandbox, rlark, tmp_path, name: str) -> dict[str, dict]:
    """One `rlark bundle` of the run: the rank's stderr with Python's fatal error is in it (Ray's, or once Ray
    dropped it with the Header container, the excerpt rlark kept), no member holds a secret value, and it reads as
    `rlark --bundle` reads it. The manifest's members by path."""
    path = tmp_path / name
    token = sandbox.store.get("secrets", f"{SEGV}-ray-token", "rlark-system", "rlark-gpu-a")
    values = [HF_TOKEN, base64.b64decode(token["data"]["auth_token"]).decode()]
    values += [base64.b64encode(value.encode()).decode() for value in values]
    written = rlark("--readonly", "bundle", SEGV, "-o", str(path))
    assert written.code == 0, written.err
    with tarfile.open(path) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert [(name, value) for name, data in members.items() for value in values if value.encode() in data] == []
    assert [name for name, data in members.items() if name.startswith("ray/stderr/") and FATAL.encode() in data]
    assert {layout.ACTORS, layout.WORKERS, layout.NODES} <= set(members)
    offline = BundleAccess(path)  # what `rlark --bundle` reads of it
    try:
        assert [j["metadata"]["name"] for j in next(offline.list_watch(JOBS, threading.Event())).items] == [SEGV]
        failure = offline.diagnosis(SEGV).first_failure
        assert (failure.worker, failure.cause) == ("ActorGroup:1", "signal") and FATAL in failure.evidence
    finally:
        offline.close()
    return {m["path"]: m for m in json.loads(members[layout.MANIFEST])["members"]}
