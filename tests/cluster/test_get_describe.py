"""`rlark get` and `rlark describe` against the sandbox over HTTPS: tables, -o wide|json|yaml|name, -A, -l."""

import json

import yaml

from tests.cluster.seeding import ROLES, job_manifest, seed_running_job


def test_get_jobs_table_lists_the_demo_job(rl):
    result = rl("get", "jobs")
    assert result.code == 0, result.err
    header, *rows = result.out.splitlines()
    assert header.split() == ["NAME", "STATUS", "WORKERS", "ROLES", "AGE", "CHECK"]
    demo = next(r for r in rows if r.startswith("demo-ppo "))
    assert demo.split()[1:4] == ["Pending", "0/3", "actor,rollout,env"]


def test_get_jobs_wide_adds_type_header_nodes_domain(rl):
    result = rl("get", "jobs", "demo-ppo", "-o", "wide")
    assert result.code == 0, result.err
    header, row = result.out.splitlines()
    assert "TYPE" in header and "HEADER" in header and "DOMAIN" in header
    assert row.split()[6:10] == ["RL", "actor", "3", "demo-net"]


def test_get_nodes_all_namespaces_with_selector(rl):
    result = rl("get", "nodes", "-A", "-l", "rlark.io/node-category=cloud")
    assert result.code == 0, result.err
    header, *rows = result.out.splitlines()
    assert header.split()[:3] == ["NAMESPACE", "NAME", "PHASE"]
    assert sorted(r.split()[1] for r in rows) == ["gpu-a1", "gpu-a2", "gpu-a3"]
    assert {r.split()[0] for r in rows} == {"rlark-gpu-a"}


def test_get_nodes_in_one_namespace_and_empty_namespace(rl):
    result = rl("get", "nodes", "-n", "rlark-edge-b")
    assert sorted(r.split()[0] for r in result.out.splitlines()[1:]) == ["edge-b1", "edge-b2"]
    empty = rl("get", "nodes")
    assert empty.code == 0 and empty.out == "" and empty.err == "No resources found in default namespace.\n"


def test_get_json_and_yaml_are_lists_with_secrets_masked(rl, sb):
    seed_running_job(sb, "get-out", ROLES)
    as_json = rl("get", "jobs", "-o", "json")
    document = json.loads(as_json.out)
    assert document["kind"] == "List"
    job = next(i for i in document["items"] if i["metadata"]["name"] == "get-out")
    env = job["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "HF_TOKEN", "value": "***"} in env
    assert "hf_supersecretvalue" not in as_json.out
    single = yaml.safe_load(rl("get", "job", "get-out", "-o", "yaml").out)
    assert single["kind"] == "Job" and single["metadata"]["name"] == "get-out"
    names = rl("get", "tasks", "-A", "-l", "rlinf.io/job=get-out", "-o", "name").out.split()
    assert names == ["task.rlinf.io/get-out-env", "task.rlinf.io/get-out-actor"]  # namespace, then name


def test_get_pods_shows_node_ip_and_phase(rl, sb):
    seed_running_job(sb, "get-pods", ROLES)
    result = rl("get", "pods", "-A", "-l", "rlark.io/task-name=get-pods-env")
    header, row = result.out.splitlines()
    assert header.split() == ["NAMESPACE", "NAME", "TASK", "PHASE", "NODE", "IP", "AGE"]
    assert row.split()[:6] == ["rlark-edge-b", "get-pods-env-0", "get-pods-env", "Running", "edge-b1", "10.0.0.11"]


def test_get_missing_name_and_unknown_kind(rl):
    missing = rl("get", "jobs", "nope")
    assert missing.code == 1 and missing.err == 'error: jobs "nope" not found\n'
    unknown = rl("get", "widgets")
    assert unknown.code == 2
    assert unknown.err == "error: unknown resource type 'widgets' (use jobs, tasks, pods, nodes, domains or workflows)\n"


def test_bad_flag_is_argparse_usage_not_a_traceback(rl, capsys):
    import pytest
    with pytest.raises(SystemExit) as info:
        rl("get", "jobs", "-o", "xml")
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'xml'" in err and "Traceback" not in err


def test_describe_job_shows_roles_pods_restarts_and_masks_secrets(rl, sb):
    seed_running_job(sb, "desc", ROLES)
    result = rl("describe", "job", "desc")
    assert result.code == 0, result.err
    text = result.out
    assert "Status:         Running (phase Running)" in text
    assert "  actor (Header): role Actor, Task desc-actor in rlark-gpu-a, phase Running" in text
    assert "    Env:            HF_TOKEN=***" in text
    assert "hf_supersecretvalue" not in text
    pods = text.split("Pods:\n", 1)[1].split("Ray:", 1)[0].splitlines()
    assert pods[0].split() == ["ROLE", "POD", "NODE", "IP", "PHASE", "RESTARTS", "REASON", "AGE"]
    assert pods[1].split()[:6] == ["actor", "desc-actor-0", "gpu-a1", "10.0.0.10", "Running", "2"]
    assert pods[2].split()[:7] == ["env", "desc-env-0", "edge-b1", "10.0.0.11", "Running", "0", "-"]
    assert "Ray:\n  unavailable: " in text


def test_describe_missing_job_is_one_line(rl):
    result = rl("describe", "job", "ghost")
    assert result.code == 1 and result.err == 'error: not found (404): jobs "ghost"\n'


def test_describe_pending_task_shows_events_and_pull_progress(rl, sb):
    seed_running_job(sb, "desc-pending", ROLES, phase="Pending")
    sb.store.mutate("tasks", "desc-pending-env", lambda task: {**task, "status": {
        "phase": "Pending",
        "pullProgress": [{"image": "registry.example/rlinf", "downloaded": "1.2GB", "total": "4.0GB",
                          "status": "Downloading"}],
        "events": [{"type": "Warning", "reason": "FailedScheduling", "message": "0/2 nodes are available",
                    "count": 3}]}}, namespace="rlark-edge-b")
    text = rl("describe", "job", "desc-pending").out
    env_section = text.split("  env: ", 1)[1].split("Pods:", 1)[0]
    assert "    Pulling:        registry.example/rlinf 1.2GB/4.0GB Downloading" in env_section
    assert "    Event:          Warning FailedScheduling: 0/2 nodes are available (x3)" in env_section
    assert "Pulling:" not in text.split("  env: ", 1)[0]


def test_get_watch_prints_the_list_then_each_change_until_the_request_timeout(sb, env, capsys):
    import threading

    from rlark_tui.cli import main
    from tests.cluster.seeding import job_manifest
    from tests.streams import watch_opens
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("code", main(
        ["--kubeconfig", str(sb.kubeconfig), "get", "jobs", "-w", "--request-timeout", "4"])))
    with watch_opens(sb, "jobs"):
        thread.start()
    sb.store.create("jobs", job_manifest("watched-1", [ROLES[1]]))
    thread.join(20)
    assert not thread.is_alive() and box["code"] == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "WORKERS", "ROLES", "AGE", "CHECK"]
    assert any(line.startswith("demo-ppo ") for line in lines[1:])
    assert lines[-1].split()[:4] == ["watched-1", "Pending", "0/1", "env"]
    assert sum(1 for line in lines if line.startswith("NAME")) == 1


def test_a_reader_that_leaves_early_gets_no_traceback(sb, env):
    """`rlark get ... | head -c 10`: rlark stops quietly (exit 141, as a shell reports SIGPIPE), no traceback."""
    import subprocess
    import sys
    made = [sb.store.create("jobs", job_manifest(f"pipe-{i}", [dict(ROLES[0], node="gpu-a3")]))["metadata"]["name"]
            for i in range(150)]
    code = ("import subprocess, sys; p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, "
            "stderr=subprocess.PIPE); p.stdout.read(10); p.stdout.close(); err = p.stderr.read(); "
            "print(p.wait()); print(err.decode())")
    result = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "rlark_tui", "--kubeconfig",
                             str(sb.kubeconfig), "get", "jobs", "-o", "yaml"], capture_output=True, text=True,
                            timeout=60)
    for name in made:
        sb.store.delete("jobs", name)
    rc, _, err = result.stdout.partition("\n")
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert rc == "141"


def test_an_output_that_cannot_be_written_is_one_line(sb, env, monkeypatch):
    """Issue 33, a seventeenth round (pipes and descriptors as a shell leaves them): with stdout on a full disk
    (`> /dev/full`) or closed (`>&-`), rlark get, describe, status and logs ended in a crash report (OSError, or
    AttributeError of a None sys.stdout). Each says in one line that its output cannot be written, exit 1, as a Unix
    tool's 'write error' does."""
    import io
    import sys

    from rlark_tui.cli import main

    commands = (["get", "jobs", "-o", "yaml"], ["describe", "job", "demo-ppo"], ["get", "nodes", "-A"])
    for target, reason in ((lambda: open("/dev/full", "w"), "No space left on device"),  # noqa: SIM115
                           (lambda: None, "it is closed")):
        for argv in commands:
            err = io.StringIO()
            with monkeypatch.context() as patched:
                patched.setattr(sys, "stdout", target())
                patched.setattr(sys, "stderr", err)
                code = main(["--kubeconfig", str(sb.kubeconfig), *argv])
            assert (code, err.getvalue()) == (1, f"error: cannot write the output to stdout: {reason}\n"), argv


def test_a_closed_stderr_leaves_the_exit_code_as_it_was(sb, env):
    """Issue 33, a seventeenth round: `rlark get jobs 2>&-` printed its table and exited 1, the lean exit's flush of a
    None sys.stderr raising AttributeError after the command was done (no line: there was no stderr to say it)."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sb.kubeconfig), "get", "jobs"],
                          stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2), text=True, timeout=60)  # noqa: PLW1509
    assert done.returncode == 0 and done.stdout.startswith("NAME ")


def test_a_bundle_to_stdout_is_the_archive_alone(sb, env, monkeypatch, tmp_path):
    """Issue 33, a seventeenth round (pipes as a shell makes them): `rlark bundle J -o /dev/stdout > b.tgz` wrote
    the archive, then its summary line into the same stream, so b.tgz ended in trailing garbage (tar: 'Child
    returned status 2'). With the archive on stdout the summary goes to stderr. `-o -` is stdout, as tar's `-f -`
    (it wrote a file named `-`)."""
    import gzip
    import io
    import sys
    import tarfile

    from rlark_tui.cli import main

    out, err = io.BytesIO(), io.StringIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8")
    with monkeypatch.context() as patched:
        patched.setattr(sys, "stdout", stdout)
        patched.setattr(sys, "stderr", err)
        code = main(["--kubeconfig", str(sb.kubeconfig), "bundle", "demo-ppo", "-o", "-"])  # tar's `-f -`
    stdout.flush()
    assert code == 0 and "bundle -: " in err.getvalue()
    archive = gzip.decompress(out.getvalue())  # raises on anything after the archive
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert "job.yaml" in tar.getnames()
    full, err = open("/dev/full", "w"), io.StringIO()  # noqa: SIM115 - `> /dev/full`: a crash report (OSError) before
    with monkeypatch.context() as patched:
        patched.setattr(sys, "stdout", full)
        patched.setattr(sys, "stderr", err)
        code = main(["--kubeconfig", str(sb.kubeconfig), "bundle", "demo-ppo", "-o", "/dev/stdout"])
    assert (code, err.getvalue().splitlines()[-1]) == (1, "error: cannot write /dev/stdout: No space left on device")
    err = io.StringIO()  # `>&-`: a crash report (AttributeError: no buffer) before
    with monkeypatch.context() as patched:
        patched.setattr(sys, "stdout", None)
        patched.setattr(sys, "stderr", err)
        code = main(["--kubeconfig", str(sb.kubeconfig), "bundle", "demo-ppo", "-o", "-"])
    assert (code, err.getvalue().splitlines()[-1]) == (1, "error: cannot write the output to stdout: it is closed")
