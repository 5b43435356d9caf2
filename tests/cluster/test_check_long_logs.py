"""The run check reads the whole log it needs: a healthy run whose Header printed 20,000 lines, its start-up
markers, rank, run ID, code ref and resolved config in the first 100 (the check used to read the last 1000
lines only and failed check 3). Gathered from the sandbox over HTTPS; checks 3 and 4 judged on what was read;
a log longer than the read budget is read from the start up to the budget and from the end, and the report
says so."""

from __future__ import annotations

import pytest

from rlark_sandbox.demo_workload import metric_table
from rlark_tui.checks import evaluate
from rlark_tui.checks import gather as gathering
from rlark_tui.cluster import ClusterAccess
from tests.checks import fixtures as fx
from tests.cluster.seeding import seed_running_job, write_log

NAME = "long-run"
LINES = 20_000
ROLES = [
    {"name": "actor", "role": "Actor", "head": True, "cluster": "rlark-gpu-a", "node": "gpu-a1"},
    {"name": "rollout", "role": "Rollout", "cluster": "rlark-gpu-a", "node": "gpu-a2"},
]


@pytest.fixture(scope="module")
def long_run(cluster_sandbox):
    pods = seed_running_job(cluster_sandbox, NAME, ROLES)
    head = fx.head_lines(steps=0)
    assert len(head) < 100 and "Ray cluster check passed." in head
    lines, step = list(head), 0
    while len(lines) < LINES:
        step += 1
        lines += [f"(RolloutWorker pid=4242) generated batch {step}"] * 30
        lines += metric_table(step, 10_000, 3.0 * step, {"rollout/rewards": step / 1e4}).splitlines()
    write_log(cluster_sandbox, *pods["actor"], lines[:LINES])
    write_log(cluster_sandbox, *pods["rollout"], fx.worker_lines(1, f"{NAME}-actor-ray-head"))
    access = ClusterAccess.open(str(cluster_sandbox.kubeconfig), cluster_sandbox.context)
    yield access, lines[:LINES]
    access.close()


def _judged(header) -> tuple:
    evidence = fx.with_log(fx.healthy(), "demo-ppo-actor-0", header.lines, read=header.read,
                           tail_start=header.tail_start)
    report = evaluate(evidence)
    return report.row(3), report.row(4)


def test_checks_3_and_4_pass_on_a_20000_line_run(long_run):
    access, written = long_run
    evidence = gathering.gather(access, NAME)
    header = evidence.log_of(f"{NAME}-actor-0")
    assert header.lines == tuple(written) and header.tail_start is None
    assert header.read == "the whole log (20,000 lines)"
    ray, app = _judged(header)
    assert ray.result == "pass", ray.all_notes()
    assert app.result == "pass", app.all_notes()
    assert "demo-ppo-actor-0: read the whole log (20,000 lines)" in ray.all_notes()


def test_a_log_over_the_budget_is_read_from_both_ends_and_said_so(long_run, monkeypatch):
    access, written = long_run
    monkeypatch.setattr(gathering, "LOG_HEAD_BYTES", 64 << 10)
    header = gathering.gather(access, NAME).log_of(f"{NAME}-actor-0")
    kept = header.tail_start
    assert 100 < kept < LINES - gathering.LOG_TAIL and header.lines[:kept] == tuple(written[:kept])
    assert header.lines[kept:] == tuple(written[-gathering.LOG_TAIL:])
    assert header.read == f"its first 0.0625 MiB ({kept:,} lines: the read budget) and its last 1,000 lines"
    ray, app = _judged(header)
    assert ray.result == "pass" and app.result == "pass", ray.all_notes() + app.all_notes()
    assert f"demo-ppo-actor-0: read {header.read}" in ray.all_notes()


def test_the_end_of_a_log_over_the_budget_is_read_to_its_byte_bound_and_the_check_row_says_so(long_run, monkeypatch):
    """Issue 33, one way to read an input: past the read budget the check read the log's last 1,000 lines whatever
    their size, and a data plane may answer lines of 16 MiB (http.MAX_LINE_BYTES): 16 GiB per container instance.
    It holds the newest within LOG_TAIL_BYTES (here 64 KiB: a kubelet's 1,000 lines never reach its 63 MiB), and
    the check's row says in one line how many it left out, with the bound."""
    import sys

    from rlark_tui.cluster.http import TAIL_LINE_HOLD

    assert gathering.LOG_TAIL_BYTES >= gathering.LOG_TAIL * TAIL_LINE_HOLD
    access, written = long_run
    monkeypatch.setattr(gathering, "LOG_HEAD_BYTES", 64 << 10)
    monkeypatch.setattr(gathering, "LOG_TAIL_BYTES", 64 << 10)
    header = gathering.gather(access, NAME).log_of(f"{NAME}-actor-0")
    tail = header.lines[header.tail_start:]
    assert 0 < len(tail) < gathering.LOG_TAIL and tail == tuple(written[-len(tail):])
    assert sum(map(sys.getsizeof, tail)) <= 64 << 10 < sum(map(sys.getsizeof, written[-len(tail) - 1:]))
    assert header.read.endswith(f"and its last {len(tail):,} lines read and {gathering.LOG_TAIL - len(tail):,} "
                                "before them left out, to hold at most 64 KiB (the read's bound)")
    ray, _app = _judged(header)
    assert f"demo-ppo-actor-0: read {header.read}" in ray.all_notes()


def test_a_repeated_gather_reads_only_what_came_after(long_run, cluster_sandbox):
    """The check's screen gathers every few seconds: the next read starts where the last one ended (sinceTime,
    resumed by timestamp and count), and a last line still being written is taken again, whole."""
    access, written = long_run
    gathering.gather(access, NAME)
    asked = []
    pod_log = access.pod_log
    access.pod_log = lambda *args, **kwargs: (asked.append(kwargs), pod_log(*args, **kwargs))[1]
    try:
        extra = ["Saving checkpoint at step 1.", "after 1"]
        write_log(cluster_sandbox, "rlark-gpu-a", f"{NAME}-actor-0", extra)
        writer = cluster_sandbox.logs.writer("rlark-gpu-a", "rlark-system", f"{NAME}-actor-0", "main")
        writer.feed("stdout", b"\rGlobal Step: 1")  # unterminated: not in the log until it ends or is flushed
        writer.feed("stdout", b"0 done\n")
        writer.close()
        header = gathering.gather(access, NAME).log_of(f"{NAME}-actor-0")
    finally:
        access.pod_log = pod_log
    assert header.lines == tuple(written + extra + ["\rGlobal Step: 10 done"])
    assert header.read == f"the whole log ({LINES + 3:,} lines)"
    head_reads = [kw for kw in asked if kw.get("timestamps") and not kw.get("previous")]
    assert head_reads and all(kw.get("since_time") for kw in head_reads)


def test_after_a_restart_the_current_log_is_read_anew(cluster_sandbox):
    pods = seed_running_job(cluster_sandbox, "restarted-run", ROLES[:1])
    cluster, pod = pods["actor"]
    write_log(cluster_sandbox, cluster, pod, ["first instance", "its last line"])
    access = ClusterAccess.open(str(cluster_sandbox.kubeconfig), cluster_sandbox.context)
    try:
        assert gathering.gather(access, "restarted-run").log_of(pod).lines == ("first instance", "its last line")
        cluster_sandbox.logs.end_instance(cluster, "rlark-system", pod, "main", 1)
        cluster_sandbox.logs.start_instance(cluster, "rlark-system", pod, "main")
        write_log(cluster_sandbox, cluster, pod, ["second instance"])
        data_pod = cluster_sandbox.store.get("pods", pod, "rlark-system", cluster)
        data_pod["status"]["containerStatuses"][0]["restartCount"] = 1
        cluster_sandbox.store.update("pods", data_pod, plane=cluster, subresource="status")
        evidence = gathering.gather(access, "restarted-run")
    finally:
        access.close()
    assert evidence.log_of(pod).lines == ("second instance",)
    assert evidence.log_of(pod, current=False).lines == ("first instance", "its last line")
