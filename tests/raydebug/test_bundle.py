"""`rlark bundle` of a real Job on the shared sandbox (its Pods run, no Ray): every member is searched for every
secret value (the Job's literal env, a Secret taken by secretKeyRef into a plain-named variable, one by envFrom whose
value ends in a newline, the Ray token), in each form; the manifest's sizes and digests are the members'; a log over
the budget keeps its first and last lines and says how much was left out; `--readonly` allows it."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
import tarfile
import threading
import time
import uuid
from datetime import UTC, datetime

import pytest

from rlark_tui.cluster.bundle_source import BundleAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.model.keys import WORKLOAD_NAMESPACE
from rlark_tui.telemetry.bundle import events_member, log_member
from tests.clirun import cli_runner
from tests.reliability.running_job import CLUSTER, edge_task, running_job

NAME = f"bundle-{uuid.uuid4().hex[:6]}"
ENV = {"HF_TOKEN": "zqBundleHf0123", "DB_PASSWORD": "zqBundleDbPw45"}
REF, FROM = f"{NAME}-ref", f"{NAME}-from"
REF_VALUE = "zqBundleRef6789"
FROM_VALUE = "zqBundleFromNl246\n"
"""A Secret made from a file ends in a newline; the Pod prints it without."""
DONE = "bundle-demo done"
LINES = 60_000
SCRIPT = "\n".join([
    'echo "token $HF_TOKEN db $DB_PASSWORD"',
    'echo "ref $RUN_NOTE from $STORE_VALUE rt $RAY_AUTH_TOKEN"',
    f"seq 1 {LINES} | sed 's/^/filler line /'",
    'echo "again $RUN_NOTE $HF_TOKEN"',
    f"echo '{DONE}'",
    "sleep 600",
])
CRASH = "\n".join(['echo "crash ref $RUN_NOTE from $STORE_VALUE $DB_PASSWORD"', "exit 3"])
TOKEN: list[str] = []


def secrets() -> list[str]:
    values = [*ENV.values(), REF_VALUE, FROM_VALUE, *TOKEN]
    forms = {form for value in values for form in (value, value.rstrip("\n"), value + "\n")}
    return sorted(forms | {base64.b64encode(form.encode()).decode() for form in forms})


def _secret(name: str, data: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": "rlark-system", "creationTimestamp": "2026-12-01T00:00:00Z"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


@pytest.fixture(scope="module")
def job(plain_sandbox):
    for name, data in ((REF, {"note": REF_VALUE}), (FROM, {"VALUE": FROM_VALUE})):
        plain_sandbox.store.create("secrets", _secret(name, data), plane=CLUSTER)
    env = [{"name": "RLARK_TASK_ROLE", "value": "actor"}, *({"name": k, "value": v} for k, v in ENV.items()),
           {"name": "RUN_NOTE", "valueFrom": {"secretKeyRef": {"name": REF, "key": "note"}}}]
    roles = [edge_task("actor", "edge-b1", SCRIPT, env, head=True), edge_task("env", "edge-b2", CRASH, env)]
    for role in roles:
        role["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["envFrom"] = [
            {"prefix": "STORE_", "secretRef": {"name": FROM}}]
    manifest = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": NAME},
                "spec": {"tasks": roles}}
    try:
        with running_job(plain_sandbox, manifest, {f"{NAME}-actor-0": DONE, f"{NAME}-env-0": "crash "}):
            token = plain_sandbox.store.get("secrets", f"{NAME}-ray-token", "rlark-system", CLUSTER)
            TOKEN.append(base64.b64decode(token["data"]["auth_token"]).decode())
            yield plain_sandbox
    finally:
        for name in (REF, FROM):
            plain_sandbox.store.delete("secrets", name, "rlark-system", CLUSTER)


def test_bundle_holds_no_secret_and_says_what_it_holds(job, env, capsys, tmp_path):
    """Written under --readonly with a 1 MiB log budget (the actor's log is larger)."""
    bundle = tmp_path / "b.tar.gz"
    rl = cli_runner(job.kubeconfig, capsys)
    result = rl("--readonly", "bundle", NAME, "-o", str(bundle), "--log-budget", "1")
    assert result.code == 0, result.err
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o600
    assert f"bundle {bundle}:" in result.out and "left out (over the budget)" in result.out
    with tarfile.open(bundle) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    leaks = [(name, value) for name, data in members.items() for value in secrets() if value.encode() in data]
    assert leaks == []
    manifest = json.loads(members["manifest.json"])
    assert manifest["job"] == NAME and manifest["log_budget"] == 2**20
    listed = {m["path"]: m for m in manifest["members"]}
    assert set(listed) == set(members) - {"manifest.json"}
    for name, member in listed.items():
        assert member["size"] == len(members[name]) and member["sha256"] == hashlib.sha256(members[name]).hexdigest()
    assert {"job.yaml", "tasks.yaml", "pods.yaml", "ray/actors.json", "diagnosis.json"} <= set(members)
    assert f"name: {NAME}".encode() in members["job.yaml"]
    actor = members[log_member(CLUSTER, WORKLOAD_NAMESPACE, f"{NAME}-actor-0", "main")].decode()
    assert "token *** db ***" in actor and "ref *** from ***\n" in actor and " rt ***\n" in actor
    assert "filler line 1\n" in actor and "again *** ***" in actor and DONE in actor
    assert "of this log left out here" in actor and f"filler line {LINES // 2}\n" not in actor
    cut = listed[log_member(CLUSTER, WORKLOAD_NAMESPACE, f"{NAME}-actor-0", "main")]
    assert cut["left_out"] > 0 and cut["read"] == cut["left_out"] + cut["size"] - len(
        [line for line in actor.splitlines(keepends=True) if "of this log left out here" in line][0].encode())
    crashed = members[log_member(CLUSTER, WORKLOAD_NAMESPACE, f"{NAME}-env-0", "main", previous=True)].decode()
    assert "crash ref *** from ***\n" in crashed
    assert b"involvedObject" in members[events_member(CLUSTER, WORKLOAD_NAMESPACE, f"{NAME}-env-0")]
    offline = BundleAccess(bundle)  # what `rlark --bundle` reads of it (tests/tui/test_bundle_tui.py shows it)
    try:
        listed_jobs = next(offline.list_watch(JOBS, threading.Event())).items
        assert [job["metadata"]["name"] for job in listed_jobs] == [NAME]
        assert any(line.endswith(DONE) for line in offline.pod_log(CLUSTER, f"{NAME}-actor-0"))
        assert offline.diagnosis(NAME) is not None
    finally:
        offline.close()


def test_a_dead_workers_stderr_ray_no_longer_serves_is_the_excerpt_rlark_kept(job, env, capsys, tmp_path):
    """Ray drops a dead worker's stderr once the Header container exits; the first failure's excerpt diagnose kept
    (here ActorGroup:1's, PID 812, kept two minutes before the run's own failure) is that member, masked as every
    member is, and the manifest says it is rlark's copy and from when."""
    from rlark_tui.local.config import state_dir
    from rlark_tui.raydash.diagnose import KeptStderr, keep
    from rlark_tui.telemetry.diagnosis import Diagnosis, Failure

    uid = job.store.get("jobs", NAME)["metadata"]["uid"]
    lines = ("Fatal Python error: Segmentation fault", f"HF_TOKEN={ENV['HF_TOKEN']}",
             '  File "/w/demo_workload.py", line 88 in step')
    at = time.time() - 3600
    failure = Failure("ActorGroup:1", f"{NAME}-actor-0", "edge-b1", at, "signal",
                      "ActorGroup:1 failed first (signal): Fatal Python error: Segmentation fault", lines, 812)
    keep(state_dir(), uid, Diagnosis(NAME, failure), KeptStderr(812, "ActorGroup:1", at + 1, lines),
         context=job.context)
    bundle = tmp_path / "kept.tar.gz"
    result = cli_runner(job.kubeconfig, capsys)("--readonly", "bundle", NAME, "-o", str(bundle))
    assert result.code == 0, result.err
    with tarfile.open(bundle) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert members["ray/stderr/812.err"].decode().splitlines() == [lines[0], "HF_TOKEN=***", lines[2]]
    kept_at = datetime.fromtimestamp(at + 1, UTC).isoformat().replace("+00:00", "Z")
    listed = {m["path"]: m for m in json.loads(members["manifest.json"])["members"]}
    assert listed["ray/stderr/812.err"]["kept_by_rlark_at"][:19] == kept_at[:19]
    assert "kept_by_rlark_at" not in listed["ray/actors.json"]
    assert ("note: ray/stderr/812.err: Ray no longer serves the stderr of worker 812 (ActorGroup:1); this is the "
            f"excerpt of it rlark kept at {kept_at[:19]}") in result.out
    diagnosis = json.loads(members["diagnosis.json"])["first_failure"]
    assert (diagnosis["worker"], diagnosis["cause"]) == ("ActorGroup:1", "signal")
