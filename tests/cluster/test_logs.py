"""`rlark logs` against the sandbox: merged prefixes, role/pod filters, tail, timestamps, previous, gateway
fallback, and -f surviving a cut stream and a sandbox restart without duplicated or lost lines."""

import threading
import time
from datetime import UTC

import pytest
import yaml

from rlark_tui.cli import main
from tests.cluster.seeding import ROLES, at, remove_pod, seed_running_job, write_log
from tests.sandbox.helpers import raw
from tests.streams import follow_opens, sent_all


@pytest.fixture
def job(sb):
    counter = getattr(job, "n", 0) + 1
    job.n = counter
    name = f"logs-{counter}"
    pods = seed_running_job(sb, name, ROLES)
    actor, env = pods["actor"], pods["env"]
    write_log(sb, *actor, ["RLINF_NODE_RANK: 0", "Executing run script..."], when=at(1))
    write_log(sb, *env, ["RLINF_NODE_RANK: 1"], when=at(2))
    write_log(sb, *actor, ["Global Step: 1/40", "Global Step: 1/40"], when=at(3))
    return name, pods


def test_logs_merges_pods_by_time_with_role_pod_prefixes(rl, job):
    name, _ = job
    result = rl("logs", name)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        f"[actor/{name}-actor-0] RLINF_NODE_RANK: 0",
        f"[actor/{name}-actor-0] Executing run script...",
        f"[env/{name}-env-0] RLINF_NODE_RANK: 1",
        f"[actor/{name}-actor-0] Global Step: 1/40",
        f"[actor/{name}-actor-0] Global Step: 1/40",
    ]


def test_logs_role_pod_tail_and_timestamps(rl, job):
    name, _ = job
    assert rl("logs", name, "--role", "env").out == f"[env/{name}-env-0] RLINF_NODE_RANK: 1\n"
    assert rl("logs", name, "--role", "Actor", "--tail", "1").out == f"[actor/{name}-actor-0] Global Step: 1/40\n"
    single = rl("logs", name, "--pod", f"{name}-env-0", "--timestamps")
    assert single.out == "2026-11-29T10:00:02.000000000Z RLINF_NODE_RANK: 1\n"


def test_logs_usage_errors_are_one_line(rl, job):
    name, _ = job
    bad_role = rl("logs", name, "--role", "critic")
    assert bad_role.code == 2 and bad_role.err == f"error: job {name} has no role 'critic' (roles: actor, env)\n"
    bad_since = rl("logs", name, "--since", "yesterday")
    assert bad_since.code == 2 and "expected a duration like 30s" in bad_since.err
    both = rl("logs", name, "-f", "--previous")
    assert both.code == 2 and both.err.startswith("error: --previous cannot be combined with -f")
    missing = rl("logs", "ghost")
    assert missing.code == 1 and missing.err == 'error: not found (404): jobs "ghost"\n'


def test_logs_previous_instance(rl, sb, job):
    name, pods = job
    cluster, pod = pods["env"]
    sb.logs.end_instance(cluster, "rlark-system", pod, "main", 1)
    sb.logs.start_instance(cluster, "rlark-system", pod, "main")
    write_log(sb, cluster, pod, ["second instance"], when=at(10))
    assert rl("logs", name, "--pod", pod).out == "second instance\n"
    assert rl("logs", name, "--pod", pod, "--previous").out == "RLINF_NODE_RANK: 1\n"
    no_previous = rl("logs", name, "--role", "actor", "--previous")
    assert no_previous.code == 1
    assert no_previous.err.startswith(f"-- [actor/{name}-actor-0] data plane rlark-gpu-a (rlark-server) BadRequest "
                                      "(400)")


def without_server_extension(config: dict) -> dict:
    """The kubeconfig without its rlark.io/server extension: discovery then finds the server's Lease and the
    admin Secret, but no CA, so it refuses to use it."""
    for entry in config["clusters"]:
        entry["cluster"].pop("extensions", None)
    return config


def test_logs_fall_back_to_the_gateway_without_a_data_plane(sb, env, capsys, job):
    name, _ = job
    config = without_server_extension(yaml.safe_load(sb.kubeconfig.read_text()))
    config["contexts"] = [c for c in config["contexts"] if c["name"] == "rlark-sandbox"]
    path = env / "control-plane-only.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    assert main(["--kubeconfig", str(path), "logs", name, "--role", "env"]) == 0
    assert capsys.readouterr().out == f"[env/{name}-env-0] RLINF_NODE_RANK: 1\n"
    assert main(["--kubeconfig", str(path), "logs", name, "--role", "env", "--previous"]) == 1
    assert "the gateway has no previous-instance logs" in capsys.readouterr().err


@pytest.fixture
def discover_often(monkeypatch):
    """A follow lists the Job's Pods again every tenth of a second, not every logs.DISCOVER_SECONDS (5 s), so it ends
    soon after its last Pod is gone, not up to 5 s later."""
    from rlark_tui.cluster import logs
    monkeypatch.setattr(logs, "DISCOVER_SECONDS", 0.1)


class Follow:
    """`rlark logs -f` running in a thread; its stdout/stderr are read from capsys at the end."""

    def __init__(self, kubeconfig, *argv):
        self.code = None
        self.thread = threading.Thread(target=self._run, args=(["--kubeconfig", str(kubeconfig), *argv],))
        self.thread.start()

    def _run(self, argv):
        self.code = main(argv)

    def join(self, timeout=60):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "rlark logs -f did not end"


def test_follow_resumes_after_a_cut_stream_without_duplicates(sb, env, capsys, job, discover_often):
    name, pods = job
    cluster, pod = pods["actor"]
    sb.faults.cut_logs(after_lines=2, times=2)  # the backlog read, then the first follow stream
    with follow_opens(sb, pod):
        follow = Follow(sb.kubeconfig, "logs", name, "--role", "actor", "-f")
    write_log(sb, cluster, pod, ["Global Step: 2/40", "Global Step: 2/40", "Global Step: 2/40"], when=at(4))
    sent_all(sb, pod)
    remove_pod(sb, name, cluster, pod)
    follow.join()
    captured = capsys.readouterr()
    assert follow.code == 0
    prefix = f"[actor/{pod}] "
    assert captured.out.splitlines() == [prefix + t for t in [
        "RLINF_NODE_RANK: 0", "Executing run script...", "Global Step: 1/40", "Global Step: 1/40",
        "Global Step: 2/40", "Global Step: 2/40", "Global Step: 2/40"]]
    dropped = (f"connection to the data plane rlark-gpu-a (rlark-server) at "
               f"{sb.server_url}/api/proxy/gpu-a/api/kubernetes was dropped")
    assert f"-- [actor/{pod}] {dropped}" in captured.err
    assert f"-- stream interrupted: [actor/{pod}] {dropped} in the middle of a response; reconnecting" in captured.err


def test_follow_survives_a_sandbox_restart_without_duplicates(tmp_path_factory, env, capsys, discover_often):
    from rlark_sandbox import Sandbox
    state = tmp_path_factory.mktemp("restart-sandbox")
    first = Sandbox(state, seed="demo", agent=False).start()
    roles = [dict(ROLES[0], restarts=0)]
    pods = seed_running_job(first, "restart", roles)
    cluster, pod = pods["actor"]
    write_log(first, cluster, pod, ["before 1", "same line", "same line"], when=at(1))
    with follow_opens(first, pod):
        follow = Follow(first.kubeconfig, "logs", "restart", "-f")
    first.stop()
    second = None
    try:
        time.sleep(1.0)  # the behaviour under test: the sandbox stays down a while, the follower keeps retrying
        second = Sandbox(state, seed="demo", agent=False).start()
        assert second.kubeconfig.read_text() == first.kubeconfig.read_text()
        write_log(second, cluster, pod, ["same line", "after restart"], when=at(1))
        write_log(second, cluster, pod, ["later"], when=at(5))
        sent_all(second, pod)
        remove_pod(second, "restart", cluster, pod)
        follow.join()
    finally:
        (second or first).stop()
    captured = capsys.readouterr()
    prefix = f"[actor/{pod}] "
    assert captured.out.splitlines() == [prefix + t for t in [
        "before 1", "same line", "same line", "same line", "after restart", "later"]]
    assert "-- stream interrupted: " in captured.err and "; reconnecting" in captured.err
    assert "Traceback" not in captured.err


def test_logs_since_keeps_only_recent_lines(rl, sb, job):
    from datetime import datetime
    name, pods = job
    write_log(sb, *pods["env"], ["fresh line"], when=datetime.now(UTC))
    result = rl("logs", name, "--since", "10m")
    assert result.code == 0, result.err
    assert result.out == f"[env/{name}-env-0] fresh line\n"


def test_control_plane_only_names_the_missing_sources(sb, env, capsys, job):
    name, _ = job
    config = without_server_extension(yaml.safe_load(sb.kubeconfig.read_text()))
    config["contexts"] = [c for c in config["contexts"] if c["name"] == "rlark-sandbox"]
    del config["contexts"][0]["context"]["extensions"]
    path = env / "bare.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    assert main(["--kubeconfig", str(path), "logs", name]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    actor, env_line = captured.err.splitlines()
    assert actor.startswith(f"-- [actor/{name}-actor-0] logs: no data plane for cluster rlark-gpu-a (")
    assert env_line.startswith(f"-- [env/{name}-env-0] logs: no data plane for cluster rlark-edge-b (")
    assert "no CA to verify rlark-server https://127.0.0.1:8443: pass --ca-cert FILE" in actor
    assert actor.endswith(") and no gateway — see `rlark config`")
    assert main(["--kubeconfig", str(path), "describe", "job", name]) == 0
    text = capsys.readouterr().out
    pod_rows = text.split("Pods:\n", 1)[1].split("Ray:", 1)[0].splitlines()[1:]
    assert [row.split()[5] for row in pod_rows] == ["-", "-"]
    ray = text.split("Ray:\n", 1)[1]
    assert ray.startswith("  unavailable: ray: no way to the dashboard in cluster rlark-gpu-a (")
    assert ray.endswith(") — see `rlark config`\n")


def _loadgen_done(sb, name: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = raw(sb, "GET", "/_sandbox/loadgen").json()
        if status["job"] == name and not status["running"]:
            return status
        time.sleep(0.05)
    raise AssertionError("the load generator did not finish")


def test_loadgen_op_writes_sequenced_lines_round_robin_to_its_pods(rl, sb):
    start = raw(sb, "POST", "/_sandbox/loadgen", {"pods": 3, "lines_per_s": 600, "seconds": 0.25, "job": "lg-a"})
    assert start.status == 200, start.body
    assert start.json()["pods"] == ["lg-a-load-0", "lg-a-load-1", "lg-a-load-2"]
    assert _loadgen_done(sb, "lg-a")["written"] == 150
    result = rl("logs", "lg-a", "--tail", "1000")
    assert result.code == 0, result.err
    seen = []
    for line in result.out.splitlines():
        prefix, _, text = line.partition(" ")
        fields = dict(part.split("=", 1) for part in text.split()[1:5])
        seq, pod, number = int(fields["seq"]), int(fields["pod"]), int(fields["n"])
        assert prefix == f"[load/lg-a-load-{pod}]" and pod == seq % 3 and number == seq // 3
        assert float(fields["t"]) > 0 and len(text) == 100
        seen.append(seq)
    assert sorted(seen) == list(range(150))
    again = raw(sb, "POST", "/_sandbox/loadgen", {"pods": 3, "lines_per_s": 40, "seconds": 0.1, "job": "lg-a"})
    assert again.status == 200 and _loadgen_done(sb, "lg-a")["written"] == 4
    assert rl("logs", "lg-a", "--pod", "lg-a-load-0", "--tail", "1").out.startswith("load seq=3 pod=0 n=1 ")


@pytest.mark.parametrize("body,error", [
    ({"pods": 0}, "loadgen pods must be a number from 1 to 1000"),
    ({"lines_per_s": "fast"}, "loadgen lines_per_s must be a number from 1 to 1000000"),
    ({"rate": 5}, "unknown loadgen field(s): rate; known: job, lines_per_s, pods, seconds, width"),
    ([1], "loadgen expects a JSON object"),
])
def test_loadgen_op_refuses_bad_requests_in_one_line(sb, body, error):
    reply = raw(sb, "POST", "/_sandbox/loadgen", body)
    assert reply.status == 400 and reply.json()["message"] == error
    assert raw(sb, "POST", "/_sandbox/loadgen", {"pods": 1}, token=None).status == 401


def test_a_pod_name_with_a_line_break_forges_no_log_line(rl, sb, job):
    """Issue 33, a fourteenth round (a hostile data plane's Pod CRs): a Pod CR's podName is the data plane's free
    text, and `rlark logs` put it in each line's `[role/pod]` prefix, and in the notice about that Pod, as it
    was: a podName 'x<LF>[actor/forged-0] all checks passed' printed a line that Pod never wrote. The prefix is
    one line (sinks.one_line), in the TUI's log pane too (model.logtarget.source_name)."""
    name, pods = job
    cluster, _ = pods["env"]
    hostile = "x\n[actor/forged-0] all checks passed"
    pod = next(p for p in sb.store.list("pods", namespace=cluster)[0] if p["spec"]["taskName"] == f"{name}-env")
    sb.store.update("pods", {**pod, "spec": {**pod["spec"], "podName": hostile}})
    write_log(sb, cluster, hostile, ["hello"], when=at(4))
    result = rl("logs", name)
    lines = (result.out + result.err).splitlines()
    assert not [line for line in lines if line.startswith("[actor/forged-0]")], lines
    assert [line for line in lines if "env/x\\n[actor/forged-0] all checks passed]" in line], lines


def test_a_follow_masks_the_secret_a_restarted_container_references_anew(sb, env, capsys, job, discover_often,
                                                                           monkeypatch):
    """Issue 33, a Job whose env's secretKeyRef names change between reads: `rlark logs -f` (and the log pane) read
    the Secrets a Pod's place referenced once, before its first read, so a container that ran anew referencing
    another Secret (an Edit & Restart that names a rotated one) printed its value in clear. A follow that reconnects
    reads that Pod's references again (secrets.LogSecrets.before_read) before it reads on. The follow reconnects
    0.1 s after the container's stream ended, not after Backoff's first 0.5 s."""
    import base64
    import functools

    from rlark_tui.cluster import logs
    from rlark_tui.cluster.access import Backoff
    monkeypatch.setattr(logs, "Backoff", functools.partial(Backoff, 0.1))

    name, pods = job
    cluster, pod = pods["actor"]
    values = {"note-v1": "zqFollowNoteOld1234", "note-v2": "zqFollowNoteNew5678"}
    for secret, value in values.items():
        sb.store.create("secrets", {"apiVersion": "v1", "kind": "Secret",
                                    "metadata": {"name": f"{name}-{secret}", "namespace": "rlark-system"},
                                    "data": {"note": base64.b64encode(value.encode()).decode()}}, plane=cluster)

    def references(secret: str) -> None:
        real = sb.store.get("pods", pod, "rlark-system", cluster)
        real["spec"]["containers"][0]["env"] = [
            {"name": "RUN_NOTE", "valueFrom": {"secretKeyRef": {"name": f"{name}-{secret}", "key": "note"}}}]
        sb.store.update("pods", real, plane=cluster)

    references("note-v1")
    write_log(sb, cluster, pod, [f"note {values['note-v1']}"], when=at(4))
    with follow_opens(sb, pod):
        follow = Follow(sb.kubeconfig, "logs", name, "--role", "actor", "-f")
    with follow_opens(sb, pod):
        references("note-v2")
        sb.logs.end_instance(cluster, "rlark-system", pod, "main", 1)
        sb.logs.start_instance(cluster, "rlark-system", pod, "main")
        write_log(sb, cluster, pod, [f"note {values['note-v2']}"], when=at(5))
    sent_all(sb, pod)
    remove_pod(sb, name, cluster, pod)
    follow.join()
    out = capsys.readouterr().out
    assert follow.code == 0 and out.splitlines()[-2:] == [f"[actor/{pod}] note ***"] * 2, out
    assert not [value for value in values.values() if value in out], out
