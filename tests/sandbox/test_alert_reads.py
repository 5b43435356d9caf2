"""The Header-log reads the alert rounds and the PROGRESS column share (cluster/logreads.py, alertpoll.py), over
the sandbox's real HTTPS with the real kubernetes client: each read asks only for the lines after the last one
seen, and one read of a Job's Header log serves both topics (never two within 10 s)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from rlark_sandbox.demo_workload import metric_table
from tests.sandbox.helpers import delete_made, running_job_with_header_log

CLUSTER, NS, JOB = "rlark-gpu-a", "rlark-system", "shared-read"
TASK, POD = f"{JOB}-main", f"{JOB}-main-0"
CRASH = "Exception occurred while running EmbodiedFSDPActor's function run_training: exception is boom"


def _table(step: int) -> str:
    return metric_table(step, 20, step * 1.0, {"rollout/rewards": step / 10})


@pytest.fixture(scope="module")
def run(bare_sandbox):
    made = running_job_with_header_log(bare_sandbox, JOB, _table(1) + _table(2), CLUSTER, NS)
    yield bare_sandbox
    delete_made(bare_sandbox, made)


@pytest.fixture
def counted(run):
    """A ClusterAccess of the sandbox whose Header-log reads are noted (time, their query keywords)."""
    from rlark_tui.cluster import ClusterAccess

    access = ClusterAccess.open(str(run.kubeconfig), run.context)
    reads: list[tuple[float, dict]] = []
    pod_log = access.pod_log

    def noted(cluster, pod, **kwargs):
        if pod == POD and not kwargs.get("follow"):
            reads.append((time.monotonic(), kwargs))
        return pod_log(cluster, pod, **kwargs)

    access.pod_log = noted
    yield access, reads
    access.close()


def test_each_read_asks_only_for_what_came_after_the_last_line(run, counted):
    access, reads = counted
    log_reads = access.log_reads
    first = log_reads.read(access, CLUSTER, POD, max_age=0)
    assert first.progress is not None and first.progress.step == 2 and first.facts.crash is None
    assert reads[-1][1]["since_seconds"] and not reads[-1][1].get("since_time")

    again = log_reads.read(access, CLUSTER, POD, max_age=60)
    assert again is first and len(reads) == 1  # younger than max_age: what the last read saw, no request

    quiet = log_reads.read(access, CLUSTER, POD, max_age=0)
    assert reads[-1][1]["since_time"] and quiet.facts is first.facts and quiet.progress == first.progress

    run.logs.append(CLUSTER, NS, POD, "main", _table(3) + "\n" + CRASH)
    grown = log_reads.read(access, CLUSTER, POD, max_age=0)
    assert grown.progress.step == 3
    assert grown.facts.crash is not None and grown.facts.crash[1] == CRASH
    assert grown.facts.run_started is None and grown.facts.progressed


def test_what_a_read_keeps_for_the_next_is_bounded_whatever_the_pods_lines(run, counted):
    """Issue 33, a seventeenth round (a Pod's own words over time): a read keeps the lines from the newest `Global
    Step` line on for the next (a table cut in two), and a Pod that printed such a line and then long lines had
    each of them kept (three lines of 16 MiB: 48 MiB per Pod, for as long as it ran). Past CARRY_CHARS nothing is
    kept (here three lines of 30,000 characters: 90 KB, past its 64 KiB); the next table is read as ever."""
    from rlark_tui.cluster.logreads import CARRY_CHARS

    access, _ = counted
    log_reads = access.log_reads
    log_reads.read(access, CLUSTER, POD, max_age=0)
    run.logs.append(CLUSTER, NS, POD, "main", "Global Step: 7/20\n" + ("x" * 30_000 + "\n") * 3)
    long = log_reads.read(access, CLUSTER, POD, max_age=0)
    assert sum(len(text) for _, text in long.carry) <= CARRY_CHARS
    run.logs.append(CLUSTER, NS, POD, "main", _table(9))
    assert log_reads.read(access, CLUSTER, POD, max_age=0).progress.step == 9


def test_a_read_holds_at_most_its_byte_bound_and_the_alerts_say_what_it_left_out(run, counted, monkeypatch):
    """Issue 33, one way to read an input: a later read of a Header log held its newest 2,000 lines whatever their
    size, and a data plane may answer lines of 16 MiB (http.MAX_LINE_BYTES): 32 GiB held by an alert round (of
    `rlark watch`, `rlark wait`, the TUI). It holds the newest lines within NEXT_TAIL_BYTES (here 1 MiB: a kubelet's
    2,000 lines never reach its 126 MiB) and `:alerts` says in one line how many it left out, with the bound."""
    import sys

    from rlark_tui.cluster import http, logreads
    from rlark_tui.flow.alertpoll import ALL_KEY, AlertRounds
    from rlark_tui.flow.snapshot import Snapshot
    from rlark_tui.view.alerts import not_read
    from rlark_tui.view.index import SnapshotIndex

    assert logreads.NEXT_TAIL_BYTES >= logreads.NEXT_TAIL_LINES * http.TAIL_LINE_HOLD
    monkeypatch.setattr(logreads, "NEXT_TAIL_BYTES", 1 << 20)
    access, _ = counted
    held: list[int] = []
    pod_log = access.pod_log

    def counting(cluster, pod, **kwargs):
        stream = pod_log(cluster, pod, **kwargs)
        batches = stream.batches

        def counted_batches():
            for batch in batches():
                held.append(sum(map(sys.getsizeof, batch)))
                yield batch
        stream.batches = counted_batches
        return stream

    access.pod_log = counting
    run.logs.start_instance(CLUSTER, NS, POD, "main")
    run.logs.append(CLUSTER, NS, POD, "main", _table(1))
    access.log_reads.read(access, CLUSTER, POD, max_age=0)
    run.logs.append(CLUSTER, NS, POD, "main", ("y" * (64 << 10) + "\n") * 40 + _table(5))
    seen = access.log_reads.read(access, CLUSTER, POD, max_age=0)
    assert 0 < held[-1] <= 1 << 20 and seen.progress.step == 5
    assert seen.left_out.startswith("its last ") and "before them left out, to hold at most 1 MiB" in seen.left_out

    listed = {kind: {f"{o['metadata']['namespace']}/{o['metadata']['name']}" if kind != "jobs" else
                     o["metadata"]["name"]: o for o in run.call(lambda kind=kind: run.store.list(kind)[0])
                     if JOB in o["metadata"]["name"] or o.get("spec", {}).get("podName") == POD}
              for kind in ("jobs", "tasks", "pods")}
    state = AlertRounds()(access, SnapshotIndex(Snapshot(**listed)), ALL_KEY)
    said = not_read(state)
    assert said.startswith(f"not read: {JOB}: its Header log: its last ") and "\n" not in said, said
    assert "left out, to hold at most 1 MiB (the read's bound)" in said


def test_a_pods_read_is_forgotten_once_the_pod_leaves_the_snapshot(run, counted):
    """Issue 33: what was read of a Pod's log (its facts, up to CARRY_CHARS of lines; a failed read its error) was
    kept an hour after the Pod was gone, so a control plane whose Pods come and go under new names held an hour of
    them. An alert round forgets the reads of the Pods no longer in the Snapshot: what is kept is bounded by the
    Pods listed, whatever the churn."""
    from rlark_tui.flow.alertpoll import ALL_KEY, AlertRounds
    from rlark_tui.flow.snapshot import Snapshot
    from rlark_tui.view.index import SnapshotIndex

    access, _ = counted
    log_reads = access.log_reads
    listed = {f"{pod['metadata']['namespace']}/{pod['metadata']['name']}": pod
              for pod in run.call(lambda: run.store.list("pods")[0]) if pod.get("spec", {}).get("podName") == POD}
    churned = [f"{JOB}-churned-{n}" for n in range(30)]  # gone before their reads ended: each kept its error
    for pod in [POD, *churned]:
        log_reads.read(access, CLUSTER, pod, max_age=0)
    assert all(log_reads.seen(CLUSTER, pod) is not None for pod in churned)
    AlertRounds()(access, SnapshotIndex(Snapshot(pods=listed)), ALL_KEY)
    assert log_reads.seen(CLUSTER, POD) is not None
    assert [pod for pod in churned if log_reads.seen(CLUSTER, pod) is not None] == []


async def test_one_header_read_serves_the_alert_round_and_progress(run, counted):
    from rlark_tui.flow.alertpoll import ALERTS, ALL_KEY
    from rlark_tui.flow.polls import PROGRESS
    from rlark_tui.flow.reconciler import Reconciler

    access, reads = counted
    run.logs.start_instance(CLUSTER, NS, POD, "main")  # a log of its own (the test above left a crash line)
    run.logs.append(CLUSTER, NS, POD, "main", _table(1) + _table(2))
    reconciler = Reconciler(access)
    task_ = asyncio.create_task(reconciler.run(lambda _published: None))

    async def until(predicate, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, what
            await asyncio.sleep(0.05)

    def progress_step() -> int | None:
        state = reconciler.snapshot.progress.get(JOB)
        return state.row.step if state is not None and state.row is not None else None

    def crashed() -> bool:
        state = reconciler.snapshot.alerts.get(ALL_KEY)
        return state is not None and (JOB, "run-crashed", JOB) in state.book.alerts

    try:
        await until(lambda: any(p.get("spec", {}).get("podName") == POD for p in reconciler.snapshot.pods.values()),
                    "the Header Pod CR in the Snapshot")
        reconciler.subscribe(ALERTS, ALL_KEY)
        reconciler.subscribe(PROGRESS, JOB)
        await until(lambda: progress_step() == 2, "the progress row of the first read")
        run.logs.append(CLUSTER, NS, POD, "main", _table(4) + "\n" + CRASH)
        await until(crashed, "run-crashed from the next read", 25)
        # the round that read it has PROGRESS look again at once (not at its next 10 s poll), with no read of its own
        await until(lambda: progress_step() == 4, "the same read's progress row in the PROGRESS result", 3)
        starts = [at for at, _ in reads]
        assert len(starts) >= 2
        assert all(later - earlier >= 9.9 for earlier, later in zip(starts, starts[1:])), starts
        assert all(kwargs.get("since_time") for _, kwargs in reads[1:])  # after the first: only the new lines
    finally:
        reconciler.stop()
        await asyncio.wait_for(task_, 10)


async def test_eight_crashed_jobs_of_one_cluster_are_all_read_and_alerted_in_one_round(bare_sandbox, monkeypatch):
    """bench alerts: of six crashed Jobs on one member cluster, the fifth and sixth alerted 10 to 80 s late. A round
    chooses eight Header logs, but reads at most four of one cluster at once (alertpoll.READS_PER_SOURCE), and the
    others were marked read without a read, so they waited LOG_SECONDS, and again. They are read as the first four
    end, in the same round (which here waits for its reads as long as they take)."""
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.flow import alertpoll
    from rlark_tui.flow.reconciler import Reconciler

    monkeypatch.setattr(alertpoll, "READ_WAIT_SECONDS", 60.0)
    names = [f"eight-crashed-{i}" for i in range(alertpoll.LOG_READS_PER_ROUND)]
    assert len(names) > alertpoll.READS_PER_SOURCE
    made = [item for name in names for item in running_job_with_header_log(bare_sandbox, name, _table(1) + CRASH, CLUSTER, NS)]
    access = ClusterAccess.open(str(bare_sandbox.kubeconfig), bare_sandbox.context)
    firsts: list[set[str]] = []

    def post(published) -> None:
        state = published.snapshot.alerts.get(alertpoll.ALL_KEY)
        crashed = {job for job, rule, _ in state.book.alerts if rule == "run-crashed"} if state else set()
        if crashed & set(names) and not firsts:
            firsts.append(crashed & set(names))

    reconciler = Reconciler(access)
    task_ = asyncio.create_task(reconciler.run(post))
    try:
        deadline = time.monotonic() + 60
        while len(reconciler.snapshot.pods) < len(names) or len(reconciler.snapshot.tasks) < len(names):
            assert time.monotonic() < deadline, "the Jobs' Tasks and Pod CRs in the Snapshot"
            await asyncio.sleep(0.05)
        reconciler.subscribe(alertpoll.ALERTS, alertpoll.ALL_KEY)
        while not firsts:
            assert time.monotonic() < deadline, "no run-crashed alert"
            await asyncio.sleep(0.05)
        assert firsts[0] == set(names), sorted(firsts[0])
    finally:
        reconciler.stop()
        await asyncio.wait_for(task_, 10)
        access.close()
        delete_made(bare_sandbox, made)


async def test_the_jobs_on_screen_are_all_read_between_costly_rounds(bare_sandbox, monkeypatch):
    """bench tui (5,000 Running Jobs): a round costs 0.1-0.5 s of CPU, so the next came 4 to 20 s later (COST_FACTOR)
    and read 8 Header logs, and the ~48 rows on screen waited a minute or more for their PROGRESS (the PROGRESS topic
    reads nothing itself while the rounds read its Jobs). Between costly rounds each call still reads the logs of the
    Jobs on screen, 8 at a time, and tells the PROGRESS topic, without judging the others; what those reads could
    not read is said with the round's errors (it was dropped)."""
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.flow import alertpoll
    from rlark_tui.flow.reconciler import Reconciler
    from rlark_tui.view.index import SnapshotIndex

    monkeypatch.setattr(alertpoll, "COST_FACTOR", 1e9)  # after the first round, every call is within its cost
    names = [f"on-screen-{i}" for i in range(alertpoll.LOG_READS_PER_ROUND + 4)]
    made = [item for name in names for item in running_job_with_header_log(bare_sandbox, name, _table(3), CLUSTER, NS)]
    access = ClusterAccess.open(str(bare_sandbox.kubeconfig), bare_sandbox.context)
    read_pods: list[str] = []
    pod_log = access.pod_log

    def noted(cluster, pod, **kwargs):
        if not kwargs.get("follow"):
            read_pods.append(pod)
        return pod_log(cluster, pod, **kwargs)

    access.pod_log = noted
    reconciler = Reconciler(access)
    task_ = asyncio.create_task(reconciler.run(lambda _published: None))
    try:
        deadline = time.monotonic() + 60
        while len(reconciler.snapshot.pods) < len(names) or len(reconciler.snapshot.tasks) < len(names):
            assert time.monotonic() < deadline, "the Jobs' Tasks and Pod CRs in the Snapshot"
            await asyncio.sleep(0.05)
        index = SnapshotIndex(reconciler.snapshot)
        told: list[str] = []
        rounds = alertpoll.AlertRounds(told.append)
        for name in names:
            access.log_reads.want(name)
        await asyncio.to_thread(rounds, access, index, alertpoll.ALL_KEY)  # a round (8 reads)
        with bare_sandbox.faults.cleared() as faults:  # the other 4, read between rounds, fail: said, as a round's
            faults.fail(503, "get", "pods/log", message="log store down")
            between = await asyncio.to_thread(rounds, access, index, alertpoll.ALL_KEY)
        await asyncio.to_thread(rounds, access, index, alertpoll.ALL_KEY)  # and one call more: nothing left to read
        assert sorted(set(read_pods)) == sorted(f"{name}-main-0" for name in names)
        assert len(read_pods) == len(names)  # each once
        assert sorted(told) == sorted(names)
        failed = sorted(error.partition(":")[0] for error in between.errors if "log store down" in error)
        assert len(failed) == 4 and set(failed) <= set(names), between.errors
    finally:
        reconciler.stop()
        await asyncio.wait_for(task_, 10)
        access.close()
        delete_made(bare_sandbox, made)


def test_a_crash_alert_masks_a_secret_value_only_the_jobs_task_references(bare_sandbox):
    """Issue 33, a secret renamed by a hostile control plane: an alert round masked a quoted log line knowing the
    Secrets the Job's spec and data-plane Pods reference, not its Tasks', so a Job whose WANDB_API_KEY entry the
    control plane showed as `0` with the value, where only the Task the Pods run from takes it from a Secret
    (`valueFrom.secretKeyRef`) and no data-plane Pod says so, had a run-crashed alert quote the value: `rlark
    watch` and its -o json, the webhook's body, `:alerts`. The round's masking knows the Secrets the Tasks
    reference too."""
    import base64

    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.flow.alertpoll import ALL_KEY, AlertRounds
    from rlark_tui.flow.snapshot import Snapshot
    from rlark_tui.view.index import SnapshotIndex

    name, value = "alert-ref-task", "zqTaskOnlyRef5512x"
    sb = bare_sandbox
    made = running_job_with_header_log(sb, name, f"Exception occurred while running EmbodiedFSDPActor's function "
                                                 f"run_training: exception is wandb login {value} failed\n", CLUSTER, NS)
    sb.store.create("secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wandb-ref", "namespace": NS},
                                "data": {"key": base64.b64encode(value.encode()).decode()}}, plane=CLUSTER)
    made.append(("secrets", "wandb-ref", NS, CLUSTER))
    container = {"name": "main", "env": [{"name": "WANDB_API_KEY",
                                          "valueFrom": {"secretKeyRef": {"name": "wandb-ref", "key": "key"}}}]}
    sb.store.mutate("tasks", f"{name}-main", lambda obj: {**obj, "spec": {**obj["spec"], "kubernetes": {
        "workload": {"template": {"spec": {"containers": [container]}}}}}}, namespace=CLUSTER)
    job = sb.store.get("jobs", name, "")
    job["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "0", "value": value}]  # the renamed entry
    sb.store.update("jobs", job)
    access = ClusterAccess.open(str(sb.kubeconfig), sb.context)
    try:
        listed = {kind: {f"{o['metadata']['namespace']}/{o['metadata']['name']}" if kind != "jobs" else
                         o["metadata"]["name"]: o for o in sb.call(lambda kind=kind: sb.store.list(kind)[0])
                         if name in o["metadata"]["name"] or o.get("spec", {}).get("podName") == f"{name}-main-0"}
                  for kind in ("jobs", "tasks", "pods")}
        state = AlertRounds()(access, SnapshotIndex(Snapshot(**listed)), ALL_KEY)
    finally:
        access.close()
        delete_made(sb, made)
    alert = state.book.alerts[name, "run-crashed", name]
    assert alert.message.endswith("exception is wandb login *** failed"), alert.message
    said = [alert.evidence, *(json.dumps(event.record()) for event in state.book.events)]
    assert not [text for text in said if value in text], said
