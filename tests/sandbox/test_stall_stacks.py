"""The progress-stalled alert takes the Job's stacks once per stall (issue 34 item 2) and quotes the outliers line in
its message and evidence: what `rlark watch` prints, its webhooks post and `:alerts` lists. The Job, its Pods and
its Header log are the sandbox's (real HTTPS, the real kubernetes client, the reconciler's alert rounds); its Ray
dashboard is Ray's recorded answers for the hung demo run (tests/raydebug/data/hang: four ranks, rank 2 in
next_batch) served over HTTP at the Job's configured Ray URL, profiling on, so `/worker/traceback` gives the dumps.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
import sys
import threading
import time
import urllib.parse
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rlark_sandbox.demo_workload import metric_table
from rlark_tui.alerting.thresholds import Thresholds
from rlark_tui.model.objects import Job
from rlark_tui.raydash import stacks as raystacks
from rlark_tui.telemetry.stacks import Stacks
from rlark_tui.view.alerts import alert_rows
from tests.clirun import cli_runner
from tests.raydebug.recorded import HANG
from tests.sandbox.helpers import delete_made, job, running_job_with_header_log

CLUSTER, NS, JOB = "rlark-gpu-a", "rlark-system", "stall-stacks"
TASK, POD, IP, NODE_ID = f"{JOB}-main", f"{JOB}-main-0", "10.77.0.7", "node-hang"
OUTLIERS = "stacks: ActorGroup:2 is elsewhere: next_batch (demo_workload.py:"
WAITING = "3 ranks wait in allreduce"


def recorded_traceback(query: dict[str, str]) -> tuple[int, str]:
    """Ray's `/worker/traceback` for the hung run: each rank's recorded dump."""
    return 200, (HANG / f"dump-{query['pid']}.txt").read_text()


class QuietServer(ThreadingHTTPServer):
    """A client's hang-up is normal here (rlark's time bound ends a held `/worker/traceback`): the answer written
    after it is dropped without socketserver's traceback on stderr; any other error still prints."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class RecordedRay:
    """Ray's dashboard as it answered for the hung run: the State API's actors, the node's IP, profiling on, each
    rank's dump from `/worker/traceback`, one alive node. Counts what it was asked, by path. `actors` and `nodes`
    (node ID -> IP) stand for other ranks, `profiling` for a head without RAY_DASHBOARD_ENABLE_PROFILING, and
    `traceback(query) -> (status, text)` for another answer of `/worker/traceback`."""

    def __init__(self, actors: list[dict] | None = None, nodes: dict[str, str] | None = None, profiling: bool = True,
                 traceback=recorded_traceback) -> None:
        workers = json.loads((HANG / "workers.json").read_text())
        self.actors = actors if actors is not None else [
            {"name": w["name"], "class_name": w["class"], "state": "ALIVE", "pid": w["pid"], "node_id": NODE_ID,
             "actor_id": f"a{w['pid']}"} for w in workers]
        self.nodes = nodes if nodes is not None else {NODE_ID: IP}
        self.profiling = profiling
        self.asked: dict[str, int] = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                url = urllib.parse.urlsplit(self.path)
                outer.asked[url.path] = outer.asked.get(url.path, 0) + 1
                query = dict(urllib.parse.parse_qsl(url.query))
                if url.path == "/worker/traceback":
                    self.answer(*traceback(query), "text/plain")
                else:
                    self.answer(200, outer.body(url.path), "application/json")

            def answer(self, status: int, text: str, kind: str) -> None:
                body = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # shutdown (close) waits for serve_forever to look at its flag, every poll_interval: 0.5 s by default
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def json(self, path: str) -> object:
        answers = {
            "/api/v0/actors": {"result": True, "data": {"result": {"result": self.actors}}},
            "/nodes": {"result": True, "data": {"summary": [{"ip": ip, "raylet": {"nodeId": node}}
                                                            for node, ip in self.nodes.items()]}},
            "/api/profiling_enabled": {"result": True, "msg": "", "data": {"profilingEnabled": self.profiling}},
            "/api/v0/nodes": {"result": True, "data": {"result": {"num_filtered": 1, "result": []}}},
            "/api/cluster_status": {"result": True, "data": {"clusterStatus": "1 node"}},
            "/api/jobs/": [],
        }
        return answers.get(path, {})

    def body(self, path: str) -> str:
        return json.dumps(self.json(path))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _table(step: int) -> str:
    return metric_table(step, 20, step * 1.0, {"rollout/rewards": step / 10})


@pytest.fixture(scope="module")
def stalled(bare_sandbox):
    """A Running Job whose Header log's last progress row (step 2 of 20, 1 s a step) is a minute old: stalled, with
    the 4 s limit of `access` (longer than the 2 s between two reads of a Header log there, so that a new row read
    resolves the stall)."""
    made = running_job_with_header_log(bare_sandbox, JOB, _table(1) + _table(2), CLUSTER, NS, node="gpu-a3",
                                       pod_status={"ip": IP, "node": "gpu-a3"}, stopped=False,
                                       when=datetime.now(UTC) - timedelta(seconds=60))
    yield bare_sandbox
    delete_made(bare_sandbox, made)


@pytest.fixture
def ray():
    server = RecordedRay()
    yield server
    server.close()


@pytest.fixture
def access(stalled, ray, monkeypatch):
    """The Job's access with a stall limit of 4 s, and the alert rounds read a Header log at most once a second
    (alertpoll.LOG_SECONDS, 10 s): every 2 s round reads it, so a stall begins, is judged and ends within seconds,
    not the 14 s limit a 10 s read interval needs."""
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.flow import alertpoll

    monkeypatch.setattr(alertpoll, "LOG_SECONDS", 1.0)
    access = ClusterAccess.open(str(stalled.kubeconfig), stalled.context)
    access.config = dataclasses.replace(access.config, ray_urls={JOB: ray.url},
                                        alerts=Thresholds(stall_min_seconds=4, stall_factor=1))
    yield access
    access.close()


async def test_a_stall_fires_quoting_its_stacks_taken_once_and_again_for_the_next(stalled, ray, access):
    from rlark_tui.flow.alertpoll import ALERTS, ALL_KEY
    from rlark_tui.flow.polls import RAY
    from rlark_tui.flow.reconciler import Reconciler

    reconciler = Reconciler(access)
    running = asyncio.create_task(reconciler.run(lambda _published: None))

    async def until(predicate, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, what
            await asyncio.sleep(0.05)

    def book():
        state = reconciler.snapshot.alerts.get(ALL_KEY)
        return state.book if state is not None else None

    def taken() -> int:
        return ray.asked.get("/api/v0/actors", 0)

    try:
        await until(lambda: any(p.get("spec", {}).get("podName") == POD for p in reconciler.snapshot.pods.values()),
                    "the Header Pod CR in the Snapshot")
        reconciler.subscribe(RAY, JOB)  # the Ray tab: every alert round judges the Job again
        reconciler.subscribe(ALERTS, ALL_KEY)
        await until(lambda: book() is not None and (JOB, "progress-stalled", JOB) in book().alerts,
                    "the progress-stalled alert")
        assert taken() == 1 and ray.asked["/worker/traceback"] == 4
        alert = book().alerts[JOB, "progress-stalled", JOB]
        assert OUTLIERS in alert.message and alert.message.endswith(WAITING)
        assert alert.message.startswith("no new progress row for ") and "at step 2/20; stacks: " in alert.message
        assert alert.evidence.endswith("Global Step 2/20, step time 1.0 s; " + alert.message.partition("; ")[2])
        event = next(e for e in book().events if e.alert.key == alert.key and e.state == "firing")
        assert OUTLIERS in event.line() and event.line().endswith(WAITING)          # rlark watch
        assert OUTLIERS in event.record()["message"]                                # -o json, webhooks, --exec
        rows, _ = alert_rows(reconciler.snapshot.alerts[ALL_KEY])                  # :alerts
        assert any(OUTLIERS in row.cells[4] for row in rows if row.cells[3] == "progress-stalled")

        # two more rounds judge the stalled Job (every round: the Ray tab's reads) and take no stacks again; then the
        # run moves one step: the next Header read resolves the alert; then it stalls again: a new alert, with the
        # stacks of its own stall
        ray_reads = ray.asked["/api/v0/nodes"]
        await until(lambda: ray.asked["/api/v0/nodes"] - ray_reads >= 2, "two more rounds of the stalled Job")
        assert taken() == 1 and (JOB, "progress-stalled", JOB) in book().alerts
        stalled.logs.append(CLUSTER, NS, POD, "main", _table(3))
        # deadlines past the 4 s stall with room for alert rounds that a loaded machine spaces out (one may come
        # after the new row's 4 s: the round resolves the first alert and fires the second at once)
        await until(lambda: any(e.alert.key == alert.key and e.state == "resolved" and e.alert.fired_at == alert.fired_at
                                for e in book().events), "the alert resolved", timeout=60)
        await until(lambda: (again := book().alerts.get((JOB, "progress-stalled", JOB))) is not None
                    and again.fired_at > alert.fired_at, "the second stall's alert", timeout=60)
        again = book().alerts[JOB, "progress-stalled", JOB]
        assert taken() == 2 and "at step 3/20; " + OUTLIERS in again.message
    finally:
        reconciler.stop()
        await asyncio.wait_for(running, 10)


def test_a_job_of_more_ranks_than_the_bound_is_not_dumped(stalled, ray, access):
    with pytest.raises(raystacks.StacksUnavailable, match=r"^stacks: 4 ranks, more than 3; `rlark stacks "
                                                           f"{JOB}` takes them$"):
        raystacks.take(access, Job(access.job(JOB).raw), max_ranks=3)
    assert "/worker/traceback" not in ray.asked


def _rlark(stalled, env, capsys, ray: RecordedRay):
    """`rlark` in-process against the sandbox, with `ray` as the Job's Ray dashboard (`ray.urls` in the config)."""
    (env / "config.yaml").write_text(f"ray:\n  urls:\n    {JOB}: {ray.url}\n")
    return cli_runner(stalled.kubeconfig, capsys)


def test_profiling_off_and_no_exec_in_the_pod_say_so_once_for_the_pod(stalled, env, capsys):
    """The Pod CR is Running but its container is gone (the data plane refuses the exec): one line for the Pod, how
    to enable stacks, no traceback, exit 0."""
    ray = RecordedRay(profiling=False)
    try:
        rlark = _rlark(stalled, env, capsys, ray)
        text = rlark("--readonly", "stacks", JOB)
        found = json.loads(rlark("--readonly", "stacks", JOB, "-o", "json").out)
    finally:
        ray.close()
    assert text.code == 0 and "Traceback" not in text.out + text.err, text
    refused = f"{POD}: Ray's dashboard has profiling off and rlark cannot exec in the Pod ("
    assert text.out.splitlines()[0] == f"stacks of {JOB} (from py-spy)"
    assert [line for line in text.out.splitlines()[1:] if line] == [line for line in text.out.splitlines()
                                                                      if line.startswith(refused)], text.out
    assert "RAY_DASHBOARD_ENABLE_PROFILING=1 on the Header role" in text.out
    assert found["source"] == "py-spy" and found["groups"] == [] and [e["pod"] for e in found["errors"]] == [POD]
    assert "/worker/traceback" not in ray.asked


def test_diagnose_reads_dead_actors_whose_death_cause_is_of_the_wrong_shape(stalled, env, capsys):
    """Issue 33, a ninth round, a hostile Ray head: a dead actor whose death_cause is text or whose error context is
    a list raised AttributeError in the choice of the dead workers whose stderr is read, and rlark diagnose (and the
    bundle, the Diagnosis card, watch's keeping of a crash) ended in a crash report. Such an actor is dead of a
    cause not told: its stderr is read as any other's."""
    dead = [{"name": "ActorGroup:1", "class_name": "Worker", "state": "DEAD", "pid": 812, "node_id": NODE_ID,
             "actor_id": "a1", "death_cause": "boom\x1b[2J"},
            {"name": "ActorGroup:2", "class_name": "Worker", "state": "DEAD", "pid": 813, "node_id": NODE_ID,
             "actor_id": "a2", "death_cause": {"actor_died_error_context": ["x"]}}]
    ray = RecordedRay(actors=dead)
    try:
        done = _rlark(stalled, env, capsys, ray)("diagnose", JOB)
    finally:
        ray.close()
    assert "crashed" not in done.err and "Traceback" not in done.out + done.err, done
    assert done.code == 0 and "\x1b" not in done.out, done
    assert ray.asked.get("/api/v0/logs/file") == 2, ray.asked


@pytest.mark.parametrize(("status", "answer", "reason"), [
    (200, "Profiling is disabled by default for security reasons", "Ray's dashboard has profiling off: set "
                                                                    "RAY_DASHBOARD_ENABLE_PROFILING=1"),
    (500, "Failed to execute: py-spy is not installed", "Ray's dashboard found no py-spy on the worker's node"),
    (500, "Failed to execute `['/usr/bin/py-spy', 'dump', '-p', '812']`.\n\n=== stderr ===\nError: ...",
     "Ray's /worker/traceback gave no stack: Ray dashboard of stall-stacks error (500) on get a worker's stack: "
     "Failed to execute `['/usr/bin/py-spy', 'dump', '-p', '812']`."),
], ids=["profiling-off", "no-py-spy", "py-spy-failed"])
def test_rays_route_without_a_stack_says_why_once_for_the_pod(stalled, env, capsys, status, answer, reason):
    ray = RecordedRay(traceback=lambda _query: (status, answer))
    try:
        done = _rlark(stalled, env, capsys, ray)("stacks", JOB, "-o", "json")
    finally:
        ray.close()
    assert done.code == 0 and "Traceback" not in done.err, done
    found = json.loads(done.out)
    assert found["source"] == "ray-dashboard" and found["groups"] == [] and ray.asked["/worker/traceback"] == 4
    assert [e["pod"] for e in found["errors"]] == [POD] and found["errors"][0]["reason"].startswith(reason), found


def held_ray() -> tuple[RecordedRay, threading.Event]:
    """A recorded Ray dashboard whose `/worker/traceback` answers only once the event is set (at most 60 s)."""
    release = threading.Event()

    def held(query: dict[str, str]) -> tuple[int, str]:
        release.wait(60)
        return recorded_traceback(query)

    return RecordedRay(traceback=held), release


def timed_take(stalled, ray: RecordedRay, release: threading.Event) -> tuple[float, Stacks]:
    """(seconds, stacks) of one take of the stalled Job's stacks from `ray`; then its held dumps are released."""
    from rlark_tui.cluster import ClusterAccess

    access = ClusterAccess.open(str(stalled.kubeconfig), stalled.context)
    access.config = dataclasses.replace(access.config, ray_urls={JOB: ray.url})
    try:
        started = time.monotonic()
        found = raystacks.take(access, access.job(JOB))
        return time.monotonic() - started, found
    finally:
        release.set()
        access.close()
        ray.close()


def test_a_route_that_never_answers_ends_within_its_bound(stalled, monkeypatch):
    """Ray's `/worker/traceback` held open: each dump ends at its time bound (here 1 s) and the Pod says why."""
    ray, release = held_ray()
    monkeypatch.setattr(raystacks, "TRACEBACK_TIMEOUT", 1.0)
    took, found = timed_take(stalled, ray, release)
    assert took < 10 and found.groups == [] and [e.pod for e in found.errors] == [POD], (took, found)
    assert found.errors[0].reason.startswith("Ray's /worker/traceback gave no stack: ") and "time" in \
        found.errors[0].reason, found.errors


def test_a_take_of_many_ranks_whose_dumps_never_come_ends_at_its_bound(stalled, monkeypatch):
    """Issue 33, a ninth round: a head that holds every `/worker/traceback` (or a Pod whose py-spy never exits) made
    a take last ranks / PARALLEL dumps' bounds one after another: 40 ranks here (1,024 allowed) were 5 rounds of
    the 15 s bound. A take waits TAKE_SECONDS (here 0.2 s) in all, and the Pod says why it gave no stack."""
    release = threading.Event()
    ray = RecordedRay(actors=[{"name": f"ActorGroup:{rank}", "class_name": "Worker", "state": "ALIVE", "pid": 500 + rank,
                               "node_id": NODE_ID, "actor_id": f"a{rank}"} for rank in range(40)],
                      traceback=lambda _query: (release.wait(60), (200, ""))[1])
    monkeypatch.setattr(raystacks, "TRACEBACK_TIMEOUT", 60.0)
    monkeypatch.setattr(raystacks, "TAKE_SECONDS", 0.2)
    took, found = timed_take(stalled, ray, release)
    assert took < 5 and found.groups == [], (took, found)
    assert [(e.pod, e.reason) for e in found.errors] == [
        (POD, "no stack within 0.2 s (all the dumps of a take; the rest not waited for)")]


async def test_a_slow_ray_head_holds_no_other_jobs_alert(stalled, monkeypatch):
    """A stalled Job whose Ray head holds every `/worker/traceback` (here until the test ends, each dump bounded
    by a 60 s TRACEBACK_TIMEOUT): the round that took its stacks waited for them, so a Job that failed meanwhile
    had its alert only when the dumps ended (two minutes for 64 ranks and the 15 s bound). The round waits
    STACKS_WAIT_SECONDS (here 0.2 s) for them: the other Job's alert fires while the dumps are still held, and the
    stall's says why it quotes no stacks. The alert rounds come every 0.2 s here, not every ROUND_SECONDS (2 s):
    the other Job fails during the first round, and its alert is the next round's."""
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.flow import alertpoll
    from rlark_tui.flow.alertpoll import ALERTS, ALL_KEY
    from rlark_tui.flow.polls import TOPICS
    from rlark_tui.flow.reconciler import Reconciler

    ray, release = held_ray()
    monkeypatch.setattr(raystacks, "TRACEBACK_TIMEOUT", 60.0)
    monkeypatch.setattr(alertpoll, "STACKS_WAIT_SECONDS", 0.2)
    access = ClusterAccess.open(str(stalled.kubeconfig), stalled.context)
    access.config = dataclasses.replace(access.config, ray_urls={JOB: ray.url},
                                        alerts=Thresholds(stall_min_seconds=4, stall_factor=1))
    reconciler = Reconciler(access, topics={**TOPICS, ALERTS: dataclasses.replace(TOPICS[ALERTS], interval=0.2)})
    running = asyncio.create_task(reconciler.run(lambda _published: None))
    failed = job("other-failed")
    failed["status"] = {"phase": "Failed", "message": "the trainer exited 1"}

    def alerts() -> dict:
        state = reconciler.snapshot.alerts.get(ALL_KEY)
        return state.book.alerts if state is not None else {}

    async def until(predicate, what: str) -> None:
        deadline = time.monotonic() + 20
        while not predicate():
            assert time.monotonic() < deadline, (what, sorted(alerts()), ray.asked)
            await asyncio.sleep(0.05)

    try:
        await until(lambda: any(p.get("spec", {}).get("podName") == POD for p in reconciler.snapshot.pods.values()),
                    "the Header Pod CR in the Snapshot")
        reconciler.subscribe(ALERTS, ALL_KEY)
        await until(lambda: ray.asked.get("/worker/traceback") == 4, "the dumps asked for")
        stalled.store.create("jobs", failed)
        await until(lambda: ("other-failed", "job-failed", "other-failed") in alerts(), "the other Job's alert")
        assert not release.is_set() and alerts()[JOB, "progress-stalled", JOB].message.endswith(
            "; stacks: not taken within 0.2 s (the Ray dashboard is slow)")
    finally:
        release.set()
        reconciler.stop()
        await asyncio.wait_for(running, 10)
        access.close()
        ray.close()
        stalled.store.delete("jobs", "other-failed")


async def test_a_slow_data_plane_holds_no_other_jobs_alert(stalled, monkeypatch):
    """issue 33, a twelfth round, a hostile data plane: its Header log read answered only after 20 s (each read
    bounded by its own 30 s timeout, a dripping one by 300 s), and the round waited for its reads, so a Job that
    failed meanwhile had its alert only when the read ended; the read held every round after it the same way. The
    round waits READ_WAIT_SECONDS (here 0.2 s) for its reads: the other Job's alert fires while the read is held,
    and the round says which read goes on."""
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.flow import alertpoll
    from rlark_tui.flow.alertpoll import ALERTS, ALL_KEY
    from rlark_tui.flow.reconciler import Reconciler

    monkeypatch.setattr(alertpoll, "READ_WAIT_SECONDS", 0.2)
    access = ClusterAccess.open(str(stalled.kubeconfig), stalled.context)
    reconciler = Reconciler(access)
    running = asyncio.create_task(reconciler.run(lambda _published: None))
    failed = job("other-failed")
    failed["status"] = {"phase": "Failed", "message": "the trainer exited 1"}

    def state():
        return reconciler.snapshot.alerts.get(ALL_KEY)

    async def until(predicate, what: str) -> None:
        deadline = time.monotonic() + 10
        while not predicate():
            assert time.monotonic() < deadline, (what, state())
            await asyncio.sleep(0.05)

    with stalled.faults.cleared() as faults:
        faults.delay(20, resource="pods/log", plane=CLUSTER)
        try:
            await until(lambda: any(p.get("spec", {}).get("podName") == POD
                                    for p in reconciler.snapshot.pods.values()), "the Header Pod CR in the Snapshot")
            reconciler.subscribe(ALERTS, ALL_KEY)
            stalled.store.create("jobs", failed)
            await until(lambda: state() is not None
                        and ("other-failed", "job-failed", "other-failed") in state().book.alerts,
                        "the other Job's alert")
            assert f"{JOB}: its Header log not read within 0.2 s (the read goes on)" in state().errors
        finally:
            reconciler.stop()
            await asyncio.wait_for(running, 10)
            access.close()
            stalled.store.delete("jobs", "other-failed")


def test_a_bundle_of_a_pod_whose_restart_count_is_no_number_is_written(stalled, env, capsys, tmp_path):
    """A data-plane Pod's containerStatuses are cluster text: a restartCount of '²' (str.isdigit, not int), a
    list or a float past int raised in the bundle's container walk, and `rlark bundle` ended in 'rlark: crashed
    (ValueError)'. Such a container is taken as not restarted: its log is in the bundle."""
    plane = stalled.store.get("pods", POD, NS, plane=CLUSTER)
    kept = json.loads(json.dumps(plane["status"]))
    plane["status"]["containerStatuses"] = [{"name": "main", "restartCount": "²", "state": {"running": {}}},
                                            {"name": "side", "restartCount": [1]}, 5]
    stalled.store.update("pods", plane, plane=CLUSTER, keep_status=False)
    try:
        out = tmp_path / "b.tar.gz"
        done = cli_runner(stalled.kubeconfig, capsys)("bundle", JOB, "-o", str(out))
    finally:
        plane = stalled.store.get("pods", POD, NS, plane=CLUSTER)
        plane["status"] = kept
        stalled.store.update("pods", plane, plane=CLUSTER, keep_status=False)
    assert done.code == 0 and "crashed" not in done.err, done
    import tarfile

    from rlark_tui.telemetry.bundle import log_member
    with tarfile.open(out) as tar:
        assert log_member(CLUSTER, NS, POD, "main") in tar.getnames(), tar.getnames()


def test_a_ray_head_answering_deeply_nested_names_ends_no_command_in_a_crash(stalled, env, capsys, tmp_path):
    """Issue 33, round H33, a hostile Ray head (the dashboard runs in the Header Pod, the Job author's): Ray's answers
    were decoded to the cluster's bound of 1,024 levels (transport.decode_json), and an actor's name, class or node
    ID, a dead one's error message or a Ray job's status 1,000 levels deep made str() and f-strings raise
    RecursionError: rlark stacks, diagnose, bundle and describe ended in 'rlark: crashed (RecursionError)', and so
    did the TUI at the Job detail's Ray tab. A Ray answer is decoded to raydash.client.MAX_DEPTH levels; one deeper
    is one line where Ray's answers are said."""
    class DeepRay(RecordedRay):
        def json(self, path: str) -> object:
            return [{"submission_id": "DEEP", "status": "DEEP"}] if path == "/api/jobs/" else super().json(path)

        def body(self, path: str) -> str:  # json.dumps itself recurses: the nesting is written as text
            return super().body(path).replace('"DEEP"', "[" * 1_000 + "]" * 1_000)

    deep = "DEEP"
    alive = [{"name": deep, "class_name": deep, "state": "ALIVE", "pid": 812, "node_id": deep, "actor_id": deep},
             {"name": "ActorGroup:2", "class_name": "Worker", "state": "ALIVE", "pid": 813, "node_id": NODE_ID}]
    dead = [{"name": deep, "class_name": deep, "state": "DEAD", "pid": 814, "node_id": deep, "actor_id": deep,
             "death_cause": {"actor_died_error_context": {"error_message": deep}}}]
    ray = DeepRay(actors=alive + dead)
    try:
        rlark = _rlark(stalled, env, capsys, ray)
        stacks = rlark("stacks", JOB)
        ran = [rlark("diagnose", JOB), rlark("bundle", JOB, "-o", str(tmp_path / "b.tar.gz")),
               rlark("describe", "job", JOB)]
    finally:
        ray.close()
    deeper = "nested deeper than 64 levels: not decoded"
    assert stacks.code == 1 and stacks.err.startswith("error: stacks: the Ray dashboard of") and deeper in stacks.err
    assert stacks.err.count("\n") == 1, stacks.err
    for done in ran:
        assert done.code == 0 and "crashed" not in done.err and "Traceback" not in done.out + done.err, done
    assert deeper in ran[0].err and deeper in ran[2].out, ran


REFERENCED = "wandb-Pw3kY8-referenced"


@contextlib.contextmanager
def _referencing(stalled, value: str):
    """The Job's Pod takes WANDB_API_KEY from a Secret of the data plane (`valueFrom.secretKeyRef`) holding `value`."""
    stalled.store.create("secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wandb", "namespace": NS},
                                     "data": {"key": base64.b64encode(value.encode()).decode()}}, plane=CLUSTER)
    plane = stalled.store.get("pods", POD, NS, plane=CLUSTER)
    kept = json.loads(json.dumps(plane["spec"]))
    plane["spec"]["containers"][0]["env"] = [{"name": "WANDB_API_KEY",
                                              "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "key"}}}]
    stalled.store.update("pods", plane, plane=CLUSTER)
    try:
        yield
    finally:
        plane = stalled.store.get("pods", POD, NS, plane=CLUSTER)
        plane["spec"] = kept
        stalled.store.update("pods", plane, plane=CLUSTER)
        stalled.store.delete("secrets", "wandb", NS, plane=CLUSTER)


def test_a_value_of_a_secret_the_pod_references_is_masked_in_diagnose_and_stacks(stalled, env, capsys):
    """Issue 33, a twenty-first round, a hostile Ray head's answers: a dead worker's stderr (Ray's log API) and
    Ray's answer of why no stack came quoted the value of WANDB_API_KEY, which the Pod takes from a Secret
    (`valueFrom.secretKeyRef`). `rlark logs` and `rlark bundle` mask such a value; `rlark diagnose` (text, JSON, the
    evidence it keeps) and `rlark stacks` masked only the Job's own env values, and printed it whole."""
    value = REFERENCED

    class Quoting(RecordedRay):
        def body(self, path: str) -> str:
            if path != "/api/v0/logs/file":
                return super().body(path)
            return ('Traceback (most recent call last):\n  File "/app/train.py", line 9, in <module>\n'
                    f"wandb.errors.AuthenticationError: login failed for key {value}\n")

    dead = [{"name": "ActorGroup:1", "class_name": "Worker", "state": "DEAD", "pid": 812, "node_id": NODE_ID,
             "actor_id": "a1", "death_cause": {"actor_died_error_context": {"error_message": "worker died"}}}]
    ray = Quoting(actors=dead + [{"name": "ActorGroup:2", "class_name": "Worker", "state": "ALIVE", "pid": 813,
                                  "node_id": NODE_ID, "actor_id": "a2"}],
                  traceback=lambda _query: (500, f"Failed to execute py-spy\nError: bad key {value}"))
    try:
        with _referencing(stalled, value):
            rlark = _rlark(stalled, env, capsys, ray)
            ran = [rlark("diagnose", JOB), rlark("diagnose", JOB, "-o", "json"), rlark("stacks", JOB, "-o", "json")]
    finally:
        ray.close()
    for done in ran:
        assert done.code == 0 and value not in done.out + done.err, done
    assert "AuthenticationError: login failed for key ***" in ran[0].out, ran[0].out
    assert json.loads(ran[2].out)["errors"] == [{"pod": POD, "reason": "Ray's /worker/traceback gave no stack: Ray "
                                                 f"dashboard of {JOB} error (500) on get a worker's stack: Failed to "
                                                 "execute py-spy"}] or "bad key ***" in ran[2].out, ran[2].out
    kept_files = [path.read_text() for path in (env / "state").rglob("*.json")]
    assert kept_files and not any(value in text for text in kept_files)


def test_a_value_of_a_secret_the_pod_references_is_masked_in_describes_ray_rows(stalled, env, capsys):
    """Issue 33, a twenty-first round, a hostile Ray head's answers with a secret planted in every string: `rlark
    describe job` printed each Ray job's id and status as the head gave them, a Secret's value the Pod references
    among them, where every other text of the page is masked."""
    class Planted(RecordedRay):
        def json(self, path: str) -> object:
            return [{"submission_id": f"raysubmit {REFERENCED}", "status": f"RUNNING {REFERENCED}"}] \
                if path == "/api/jobs/" else super().json(path)

    ray = Planted()
    try:
        with _referencing(stalled, REFERENCED):
            done = _rlark(stalled, env, capsys, ray)("describe", "job", JOB)
    finally:
        ray.close()
    assert done.code == 0 and REFERENCED not in done.out + done.err, done
    assert "  ray job raysubmit ***: RUNNING ***" in done.out.splitlines(), done.out


JOB_REFERENCED = "wandb-Qx7mZ2-job-referenced"


class QuotingRay(RecordedRay):
    """A Ray head whose `ray status` and Ray job's entrypoint quote the values of the Secrets REFERENCED (which only
    the data-plane Pod references) and JOB_REFERENCED (which only the Job's spec does)."""

    def json(self, path: str) -> object:
        if path == "/api/cluster_status":
            return {"result": True, "data": {"clusterStatus": f"Active:\n 1 node_{REFERENCED}\n 1 node_{JOB_REFERENCED}\n"}}
        if path == "/api/jobs/":
            return [{"submission_id": "raysubmit_1", "status": "RUNNING",
                     "entrypoint": f"python main.py --key {REFERENCED} --job-key {JOB_REFERENCED}"}]
        return super().json(path)


async def test_the_ray_tab_masks_a_value_of_a_secret_the_job_or_only_its_data_plane_pod_references(stalled):
    """Issue 33, a twenty-first round, the TUI over a hostile Ray head whose answers hold a Secret's value: the Ray
    tab masked only the Job's own env values, so `ray status` and a Ray job's entrypoint showed the value of
    WANDB_API_KEY, which the Job takes from a Secret (`valueFrom.secretKeyRef`), in 3 of 10 generated runs. Then
    (follows 51a953a) it masked the Secrets the Job's spec and Tasks reference, not one only its data-plane Pod does
    (env the platform adds), where `rlark describe job` masks it in the same Ray answers. Its poll, every 2 s, takes
    each role's data-plane Pod from the pod lists the alert rounds keep (a Pod's references do not change in its
    life): no read of its own while they hold it. One Ray tab shows both: JOB_REFERENCED is the value of a Secret
    only the Job's spec references, REFERENCED of one only the data-plane Pod does."""
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.screens.job_detail import JobDetailScreen
    from rlark_tui.tui.app import RlarkApp
    from tests.pilot import wait_for

    spec = stalled.store.get("jobs", JOB)
    kept = json.loads(json.dumps(spec["spec"]))
    spec["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb-job", "key": "key"}}}]
    stalled.store.update("jobs", spec)
    stalled.store.create("secrets", {"apiVersion": "v1", "kind": "Secret",
                                     "metadata": {"name": "wandb-job", "namespace": NS},
                                     "data": {"key": base64.b64encode(JOB_REFERENCED.encode()).decode()}},
                         plane=CLUSTER)
    ray = QuotingRay()
    access = ClusterAccess.open(str(stalled.kubeconfig), stalled.context)
    access.config = dataclasses.replace(access.config, ray_urls={JOB: ray.url})
    try:
        with _referencing(stalled, REFERENCED):
            app = RlarkApp(access)
            async with app.run_test(size=(140, 50)) as pilot:
                await wait_for(pilot, lambda: app.index is not None and app.index.job(JOB)
                               and app.screen.table.select_key(JOB), "the Job")
                await pilot.press("enter", "r")
                assert isinstance(app.screen, JobDetailScreen)
                await wait_for(pilot, lambda: "raysubmit_1" in str(app.screen.query_one("#ray-text").render()),
                               "the Ray tab")
                shown = str(app.screen.query_one("#ray-text").render())
    finally:
        ray.close()
        access.close()
        stalled.store.delete("secrets", "wandb-job", NS, plane=CLUSTER)
        spec = stalled.store.get("jobs", JOB)
        spec["spec"] = kept
        stalled.store.update("jobs", spec)
    assert JOB_REFERENCED not in shown, f"the value of a Secret the Job's spec references is shown:\n{shown}"
    assert REFERENCED not in shown, f"the value of a Secret only the data-plane Pod references is shown:\n{shown}"
    assert shown.splitlines().count(" 1 node_***") == 2, shown
    assert "  Ray job raysubmit_1: RUNNING python main.py --key *** --job-key ***" in shown.splitlines(), shown


def test_describes_ray_row_is_cut_once_masked_whatever_the_length_of_a_ray_jobs_id(stalled, env, capsys):
    """Issue 33, one-line fields bounded: `rlark describe job` printed a Ray job's id and status as the head gave
    them, one line of up to Ray's answer bound (32 MiB: here 2 MiB). The row is cut at sinks.FIELD_CHARS, the rest
    counted, once masked: a Secret's value across the cut is masked whole, no prefix of it shown."""
    from rlark_tui.text.sinks import FIELD_CHARS

    submission = "raysubmit_" + "a" * (FIELD_CHARS - 20) + REFERENCED + "b" * (2 << 20)

    class Long(RecordedRay):
        def json(self, path: str) -> object:
            return [{"submission_id": submission, "status": "RUNNING"}] if path == "/api/jobs/" else super().json(path)

    ray = Long()
    try:
        with _referencing(stalled, REFERENCED):
            done = _rlark(stalled, env, capsys, ray)("describe", "job", JOB)
    finally:
        ray.close()
    (row,) = [line for line in done.out.splitlines() if line.startswith("  ray job ")]
    assert done.code == 0 and REFERENCED[:6] not in done.out + done.err, row[:2000]
    assert row == "  ray job " + f"raysubmit_{'a' * (FIELD_CHARS - 20)}***{'b' * 7}… (" \
        f"{len(submission) - len(REFERENCED) + len('***: RUNNING') - FIELD_CHARS:,} more characters)", row[-200:]
