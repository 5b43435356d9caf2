"""`rlark diagnose` end to end on Ray's recorded answers (tests/raydebug/recorded.py) behind a stand-in for the
platform: what it prints, the evidence it keeps (0600, masked) and answers from once Ray started afresh, the Job
was stopped or deleted. The live run is tests/raydebug/test_diagnose_ray.py."""

from __future__ import annotations

import argparse
import json
import re
import stat

import pytest

from rlark_tui.cluster.errors import NotFound, Unreachable
from rlark_tui.commands import diagnose as command
from rlark_tui.model.objects import Job
from rlark_tui.raydash.diagnose import kept_path
from tests.raydebug.recorded import CRASHED_PID, DATA, _json

FATAL = "Fatal Python error: Segmentation fault"
JOB = {"metadata": {"name": "segv", "uid": "u-1"}, "spec": {"tasks": [{"name": "actor", "head": True}]}}
CR = {"metadata": {"name": "e8174ec1", "namespace": "rlark-gpu-a", "labels": {"rlark.io/task-name": "segv-actor"}},
      "spec": {"podName": "segv-actor-0", "podNamespace": "rlark-system", "taskName": "segv-actor"},
      "status": {"phase": "Running", "node": "gpu-a3", "ip": "127.134.0.52"}}


class Dashboard:
    def __init__(self, platform: Platform) -> None:
        self.platform = platform

    def state_list(self, resource, what, query=None):
        if not self.platform.ray:
            raise Unreachable("Ray dashboard of segv: connection refused", "connection")
        return _json(f"{resource}.json")

    def node_ips(self):
        return {n["raylet"]["nodeId"]: n["ip"] for n in _json("nodes.json")["summary"]}

    def text(self, path, what, query=None):
        asked = dict(query or [])
        assert path == "/api/v0/logs/file" and asked["suffix"] == "err" and asked["lines"] == "200"
        self.platform.stderr_asked.append(int(asked["pid"]))
        return (DATA / f"err-{asked['pid']}.txt").read_text() if int(asked["pid"]) == CRASHED_PID else ""


class Platform:
    """ClusterAccess as diagnose uses it: the Job, its Pod CR and data-plane pod, the Header log, Ray."""

    def __init__(self) -> None:
        self.context = "stand-in"
        self.exists, self.pods, self.ray = True, True, True
        self.stderr_asked: list[int] = []
        self.server_problem = ""

    def job(self, name):
        if not self.exists:
            raise NotFound("jobs segv not found", 404, "Not Found")
        return Job(JOB)

    def job_tasks(self, name):
        return [{"metadata": {"name": "segv-actor", "namespace": "rlark-gpu-a"}}]

    def job_pods(self, name, tasks=None):
        return [CR] if self.pods else []

    def data_plane_pod(self, cluster, pod, namespace="rlark-system"):
        return _json("corepods.json")[0]

    def pod_log(self, cluster, pod, **kwargs):
        # the kubelet's CRI lines as the API serves them with timestamps=true: `<stamp> <text>`
        lines = (DATA / "header.log").read_text().splitlines()
        return [] if not kwargs.get("previous") else [f"{ln.split(' ', 3)[0]} {ln.split(' ', 3)[3]}" for ln in lines]

    def ray_dashboard(self, job):
        return Dashboard(self)

    def close(self):
        pass


@pytest.fixture
def platform(monkeypatch, tmp_path):
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path / "state"))
    found = Platform()
    monkeypatch.setattr(command.ClusterAccess, "from_args", classmethod(lambda cls, args: found))
    return found


def _run(capsys, output="text"):
    code = command.run(argparse.Namespace(job="segv", output=output))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_diagnose_prints_the_first_failure_and_keeps_it_private(platform, capsys, tmp_path):
    code, out, err = _run(capsys, "json")
    assert code == 0 and err == ""
    failure = json.loads(out)["first_failure"]
    assert (failure["worker"], failure["cause"], failure["pod"], failure["node"]) == (
        "ActorGroup:1", "signal", "segv-actor-0", "gpu-a3")
    assert FATAL in failure["evidence"]
    assert platform.stderr_asked == [CRASHED_PID]  # only the worker that died of something else than its refs
    kept = kept_path(tmp_path / "state", "segv", "stand-in")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    payload = json.loads(kept.read_text())
    assert payload["uid"] == "u-1"
    # the rank's stderr excerpt beside it, for a bundle taken once Ray no longer serves that stderr
    assert (payload["stderr"]["pid"], payload["stderr"]["worker"]) == (CRASHED_PID, "ActorGroup:1")
    assert payload["stderr"]["lines"] == failure["evidence"] and payload["stderr"]["kept_at"]


def test_once_ray_started_afresh_and_the_job_is_stopped_or_gone_the_kept_evidence_answers(platform, capsys, tmp_path):
    _run(capsys)
    kept = kept_path(tmp_path / "state", "segv", "stand-in")
    first = json.loads(kept.read_text())["stderr"]
    platform.ray = False
    code, out, err = _run(capsys)
    assert code == 0 and out.startswith(f"first failure: ActorGroup:1 failed first (signal): {FATAL}")
    assert json.loads(kept.read_text())["stderr"] == first  # kept as first seen, not again
    assert "note: Ray: Ray dashboard of segv: connection refused" in err
    assert "kept when it was first seen" in err
    platform.pods = False
    assert _run(capsys)[1].startswith("first failure: ActorGroup:1 failed first (signal)")
    platform.exists = False
    code, out, err = _run(capsys)
    assert code == 0 and FATAL in out and "Job segv does not exist" in err


def test_a_job_made_again_under_the_same_name_starts_afresh(platform, capsys, tmp_path):
    _run(capsys)
    platform.ray = platform.pods = False
    JOB["metadata"]["uid"] = "u-2"
    try:
        code, out, _ = _run(capsys)
    finally:
        JOB["metadata"]["uid"] = "u-1"
    assert code == 0 and out.startswith("segv: no failure found")


def test_nothing_kept_and_no_job_is_one_error(platform, capsys):
    from rlark_tui.errors import RlarkError

    platform.exists = False
    with pytest.raises(RlarkError, match="Job segv does not exist and no evidence of it was kept"):
        _run(capsys)


def test_the_diagnosis_topic_reads_what_rlark_diagnose_reads(platform):
    from rlark_tui.flow.polls import TOPICS, fetch_diagnosis
    from rlark_tui.flow.snapshot import Snapshot
    from rlark_tui.view.index import SnapshotIndex

    index = SnapshotIndex(Snapshot(jobs={"segv": JOB}))
    found = fetch_diagnosis(platform, index, "segv")
    assert (found.first_failure.worker, found.first_failure.cause) == ("ActorGroup:1", "signal")
    assert index.diagnosis_of("segv") is None and TOPICS["diagnosis"].interval == 15.0
    assert fetch_diagnosis(platform, SnapshotIndex(Snapshot()), "segv") is None  # not listed yet: asked again soon


def test_a_job_of_the_same_name_in_another_context_neither_sees_nor_replaces_the_kept_evidence(platform, capsys,
                                                                                                tmp_path):
    """The kept first failures were one file per Job name for every context: with two contexts (`--context`,
    `rlark watch --all-contexts`, the TUI's switch) another cluster's Job of the same name, or a hostile control
    plane's, replaced a context's kept evidence, and `rlark diagnose` of a Job gone from the other context answered
    with this one's. Each context keeps its own, whatever its name (case, `/`, `..`)."""
    from rlark_tui.errors import RlarkError

    state = tmp_path / "state"
    platform.context = "site-a"
    _run(capsys)
    kept = kept_path(state, "segv", "site-a")
    before = kept.read_text()
    platform.context, platform.exists = "site-b", False
    with pytest.raises(RlarkError, match="^diagnose: Job segv does not exist and no evidence of it was kept$"):
        _run(capsys)
    platform.exists = True
    JOB["metadata"]["uid"] = "u-2"
    try:
        for other in ("SITE-A", "site/a", "../site-a"):
            platform.context = other
            assert _run(capsys)[0] == 0
            assert kept_path(state, "segv", other).parent.parent == state / "diagnosis"
    finally:
        JOB["metadata"]["uid"] = "u-1"
    assert kept.read_text() == before
    assert len(list((state / "diagnosis").glob("*/segv.json"))) == 4


def test_a_first_failure_an_earlier_rlark_kept_is_read_for_its_job_or_said_not_shown(platform, capsys, tmp_path):
    """Issue 33, left open by the fifteenth round: a first failure kept before beb1198 (diagnosis/<job>.json, one for
    every context) or before 5545ab5 (the context's, named by file_name) was no longer read, and nothing said so:
    rlark diagnose of a Job gone since answered that no evidence was kept. The context's earlier file is read; the
    one for every context only for the Job of its uid, and otherwise one line says it is not shown."""
    from rlark_tui.errors import RlarkError
    from rlark_tui.raydash.diagnose import keep, read_kept
    from rlark_tui.telemetry import diagnosis as d
    from tests.raydebug.recorded import sigsegv_inputs

    state = tmp_path / "state"
    _run(capsys)
    shared = state / "diagnosis" / "segv.json"
    kept_path(state, "segv", "stand-in").rename(shared)  # where an rlark before beb1198 kept it
    platform.ray = platform.pods = False
    code, out, err = _run(capsys)
    assert code == 0 and out.startswith(f"first failure: ActorGroup:1 failed first (signal): {FATAL}")
    assert "kept when it was first seen" in err
    platform.exists = False
    with pytest.raises(RlarkError, match=(
            r"^diagnose: Job segv does not exist and no evidence of it was kept; a first failure of a Job segv that "
            rf"an earlier rlark kept for every context \({re.escape(str(shared))}\) is not shown: it names no "
            r"context, and the Job is gone, so no uid tells whose it is$")):
        _run(capsys)
    platform.exists = True  # made again under the same name: another uid; the note is said once for the record
    JOB["metadata"]["uid"] = "u-2"
    try:
        said = [_run(capsys)[2] for _ in range(2)]
    finally:
        JOB["metadata"]["uid"] = "u-1"
    assert [f"({shared}) is not shown: it names no context and is another Job's" in err for err in said] == [True, False]
    keep(state, "u-9", d.diagnose(sigsegv_inputs(job="a/b")), context="c")
    kept_path(state, "a/b", "c").rename(kept_path(state, "a/b", "c").with_name("a_b.json"))  # before 5545ab5
    found = read_kept(state, "a/b", "u-9", context="c")
    assert found is not None and found.diagnosis.job == "a/b"


def test_a_note_is_one_line_whatever_ray_or_the_pod_answered(platform, capsys, monkeypatch):
    """Issue 33, a fourteenth round (a hostile Ray head's error message): a note quotes what failed, and Ray's
    envelope puts its own `msg` in the error as it comes (RayDashboard._envelope), so a head answering
    {"result": false, "msg": "x<LF>first failure: ActorGroup:0 failed first (oom)"} printed a forged first failure
    under `rlark diagnose`'s notes; so did a Pod CR's podName in 'Pod NAME: ...'. Each note is one line."""
    from rlark_tui.cluster.errors import ApiError

    def refuse(self, resource, what, query=None):
        raise ApiError(f"Ray dashboard of segv: /api/v0/{resource} failed: x\nfirst failure: ActorGroup:0 failed "
                       "first (oom)")

    monkeypatch.setattr(Dashboard, "state_list", refuse)
    code, out, err = _run(capsys)
    assert not [line for line in (out + err).splitlines() if line.startswith("first failure: ActorGroup:0")], err
    assert "failed: x\\nfirst failure: ActorGroup:0 failed first (oom)" in err


def test_the_header_log_diagnose_holds_is_bounded_in_bytes_and_the_bound_said_in_one_line(platform, capsys,
                                                                                         monkeypatch):
    """Issue 33, open item: diagnose read the Header log's last 20,000 lines per container instance whatever their
    size, and a line may be 16 MiB (http.MAX_LINE_BYTES): 320 GiB a read. It holds the newest lines within
    HEADER_BYTES (here 1 MiB) and says so in one line; the first failure, at the log's end, is still found."""
    import io

    from rlark_tui.cluster.errors import Request
    from rlark_tui.cluster.http import LineStream
    from rlark_tui.raydash import diagnose as reads

    class Body(io.BytesIO):
        def release_conn(self) -> None:
            pass

    recorded = Platform.pod_log(platform, "", "", previous=True)
    filler = [f"2026-12-01T03:00:00.{n:09d}Z {'x' * (16 << 10)}" for n in range(400)]  # 1.6 MiB held cut

    def pod_log(cluster, pod, **kwargs):
        data = "".join(f"{line}\n" for line in (filler + recorded if kwargs.get("previous") else [])).encode()
        return LineStream(Body(data), Request("logs", "pods", pod, "ns", "data plane"), 5, last=kwargs["tail"],
                          last_bytes=kwargs["tail_bytes"], line_chars=kwargs["line_chars"])

    monkeypatch.setattr(platform, "pod_log", pod_log)
    monkeypatch.setattr(reads, "HEADER_BYTES", 1 << 20)
    notes: list[str] = []
    held = reads.gather(platform, Job(JOB), notes).header_log
    assert 0 < sum(len(text.encode()) for _at, text in held) <= 1 << 20
    code, out, err = _run(capsys)
    assert code == 0 and out.startswith("first failure: ActorGroup:1 failed first (signal)")
    said = [line for line in err.splitlines() if "1 MiB" in line]
    assert len(said) == 1 and said[0].startswith("note: the Header log (previous container): ") and \
        "its last " in said[0], err


def test_jobs_whose_names_make_one_file_name_each_keep_their_own_first_failure(tmp_path):
    """Issue 33, a fifteenth round (left-over item B: file names from cluster names on a case-insensitive file
    system): a context's kept first failures were one file per file_name of the Job's name, which keeps case and
    makes `a/b` and `a_b` alike, so a hostile control plane's Job 'a/b' replaced Job a_b's kept evidence (and 'PPO'
    replaced ppo's on a case-insensitive file system): rlark diagnose of a_b once gone answered none. A name that
    is no Kubernetes name is kept under file_name, `_` and a digest of it (sinks.object_file_name)."""
    from rlark_tui.raydash.diagnose import keep, read_kept
    from rlark_tui.telemetry import diagnosis as d
    from tests.raydebug.recorded import sigsegv_inputs

    state, names = tmp_path / "state", ["ppo", "PPO", "a_b", "a/b", "a.b"]
    for n, name in enumerate(names):
        keep(state, f"u-{n}", d.diagnose(sigsegv_inputs(job=name)), context="c")
    kept = [read_kept(state, name, f"u-{n}", context="c") for n, name in enumerate(names)]
    assert [found.diagnosis.job if found else None for found in kept] == names
    files = [path.name for path in (state / "diagnosis").glob("*/*.json")]
    assert len({name.lower() for name in files}) == len(names) and "ppo.json" in files and "a.b.json" in files


def test_a_context_keeps_the_newest_first_failures_whatever_the_churn_of_job_names(tmp_path, monkeypatch):
    """Issue 33, a seventeenth round (churn over time): rlark watch keeps a first failure for each Job a critical
    alert fires on, one file per Job, never removed, so a control plane whose Jobs crash under new names every
    second made a file a second for as long as it ran. A context keeps its newest KEPT_PER_CONTEXT; a link
    planted among them is left, not followed."""
    import os

    from rlark_tui.raydash import diagnose
    from rlark_tui.raydash.diagnose import keep, read_kept
    from rlark_tui.telemetry import diagnosis as d
    from tests.raydebug.recorded import sigsegv_inputs

    monkeypatch.setattr(diagnose, "KEPT_PER_CONTEXT", 3)
    state, elsewhere = tmp_path / "state", tmp_path / "elsewhere.json"
    elsewhere.write_text("{}")
    keep(state, "u-0", d.diagnose(sigsegv_inputs(job="crash-0")), context="c")
    os.utime(kept_path(state, "crash-0", "c"), ns=(0, 0))
    folder = kept_path(state, "crash-0", "c").parent
    (folder / "planted.json").symlink_to(elsewhere)
    for n in range(1, 6):
        keep(state, f"u-{n}", d.diagnose(sigsegv_inputs(job=f"crash-{n}")), context="c")
        os.utime(kept_path(state, f"crash-{n}", "c"), ns=(n * 10**9, n * 10**9))  # ages apart on any FS
    kept = [n for n in range(6) if read_kept(state, f"crash-{n}", f"u-{n}", context="c") is not None]
    assert kept == [3, 4, 5], kept
    assert sorted(path.name for path in folder.iterdir()) == ["crash-3.json", "crash-4.json", "crash-5.json",
                                                                "planted.json"]
    assert elsewhere.read_text() == "{}"


def test_a_job_whose_name_holds_a_lone_surrogate_is_diagnosed_and_its_evidence_kept(platform, capsys, tmp_path):
    """Issue 33, a fifteenth round (a hostile control plane's Job name): JSON may escape a lone surrogate
    ('\\ud800'), which no UTF-8 file holds, and the kept evidence was written by json.dumps(ensure_ascii=False) as
    UTF-8, so rlark diagnose of such a Job (the TUI's diagnosis read too) ended in a crash report
    (UnicodeEncodeError), as did the name's digest for its file. The one writer writes a lone surrogate as its
    escape, which JSON reads back as it was."""
    name = "x\ud800y"
    JOB["metadata"]["name"] = name
    try:
        code = command.run(argparse.Namespace(job=name, output="text"))
    finally:
        JOB["metadata"]["name"] = "segv"
    assert code == 0 and FATAL in capsys.readouterr().out
    from rlark_tui.raydash.diagnose import read_kept

    kept = read_kept(tmp_path / "state", name, "u-1", context="stand-in")
    assert kept is not None and kept.diagnosis.job == "x\\ud800y"  # shown as its escape, as every cleaned text
