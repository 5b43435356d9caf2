"""`rlark draft render --context` against live Nodes, and the log follower (backlog, live lines, end)."""

import threading

import yaml

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.logmerge import LogLine
from rlark_tui.cluster.logs import JobLogs, Notice, resolve_targets
from tests.cluster.seeding import ROLES, at, remove_pod, seed_running_job, write_log
from tests.streams import follow_opens, sent_all

DRAFT = """\
name: {name}
type: rl
header: actor
roles:
  - name: actor
    role: Actor
    cluster: rlark-gpu-a
    selector: {{kubernetes.io/hostname: {node}}}
    gpu: 1
    image: registry.example/rlinf@sha256:{digest}
domain: {domain}
runScript: python train.py
"""


def draft(env, name, node="gpu-a3", domain="demo-net"):
    path = env / f"{name}.yaml"
    path.write_text(DRAFT.format(name=name, node=node, domain=domain, digest="ef" * 32))
    return str(path)


def test_draft_render_reads_live_nodes_of_the_context(rl, env):
    result = rl("draft", "render", draft(env, "live-1"), "--context", "rlark-sandbox")
    assert result.code == 0, result.err
    job = yaml.safe_load(result.out)
    assert job["spec"]["tasks"][0]["nodeSelector"] == {"kubernetes.io/hostname": "gpu-a3"}
    assert job["spec"]["tasks"][0]["kubernetes"]["workload"]["replicas"] == 1


def test_draft_render_live_knows_existing_jobs_and_domains(rl, env):
    taken = rl("draft", "render", draft(env, "demo-ppo"))
    assert taken.code == 1 and taken.out == ""
    assert any(line.startswith("error name:") and "demo-ppo" in line for line in taken.err.splitlines())
    unknown = rl("draft", "render", draft(env, "live-2", domain="no-such-domain"))
    assert any("no-such-domain" in line for line in unknown.err.splitlines())
    missing_node = rl("draft", "render", draft(env, "live-3", node="gpu-z9"))
    assert missing_node.code == 1


def test_draft_render_with_unknown_context_is_one_line(rl, env):
    result = rl("draft", "render", draft(env, "live-4"), "--context", "nope")
    assert result.code == 2 and result.err.startswith("error: context 'nope' is not in the kubeconfig")


def test_follower_gives_backlog_then_live_lines_then_ends_when_the_pods_go(sb, env):
    pods = seed_running_job(sb, "stream-1", ROLES)
    cluster, pod = pods["actor"]
    write_log(sb, cluster, pod, ["RLINF_NODE_RANK: 0"], when=at(1))
    write_log(sb, *pods["env"], ["RLINF_NODE_RANK: 1"], when=at(2))
    access = ClusterAccess.open(str(sb.kubeconfig))
    logs = JobLogs(access, "stream-1", resolve_targets(access, "stream-1"), tail=1000)
    lines, notices = logs.backlog()
    seen: list = [*notices, *lines]
    thread = threading.Thread(target=logs.follow, args=(seen.append, seen.append), daemon=True)
    with follow_opens(sb, pod):
        thread.start()
    write_log(sb, cluster, pod, ["Global Step: 1/40"], when=at(3))
    sent_all(sb, pod)
    remove_pod(sb, "stream-1", cluster, pod)
    remove_pod(sb, "stream-1", *pods["env"])
    thread.join(30)
    assert not thread.is_alive()
    lines = [(i.source, i.text) for i in seen if isinstance(i, LogLine)]
    assert lines == [("actor/stream-1-actor-0", "RLINF_NODE_RANK: 0"), ("env/stream-1-env-0", "RLINF_NODE_RANK: 1"),
                     ("actor/stream-1-actor-0", "Global Step: 1/40")]
    assert isinstance(seen[-1], Notice) and seen[-1].text == "-- no Pods left to follow for job stream-1"


def test_logs_of_a_job_without_pods_says_so(rl, sb, env):
    seed_running_job(sb, "stream-2", [])
    result = rl("logs", "stream-2")
    assert result.code == 0 and result.err == "-- job stream-2: No Pod details yet — waiting for task sync\n"
