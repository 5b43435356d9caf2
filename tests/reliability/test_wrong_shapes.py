"""Issue 33: answers of the wrong shape, through every subcommand. The sandbox holds Jobs whose fields have the
wrong types, JSON nested past Python's recursion limit in the annotations rlark decodes, Unicode digits and
5,000-digit numbers, and its list answers carry items the store would refuse (`metadata: 5`, a list, a number).
Every subcommand of `build_parser()` runs in-process against it: what the user gets is a result, or a documented
exit code with its `error: ...` line, never a traceback and never `rlark: crashed`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator

import pytest
import yaml

from rlark_sandbox.store import NotFound
from rlark_tui.cli import build_parser
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.commands import watch
from rlark_tui.local.config import RlarkConfig
from rlark_tui.model import keys
from rlark_tui.model.submission import SUBMITTED_SPEC_ANNOTATION
from tests import loopback
from tests.reliability.malformed import sandbox_jobs, sandbox_nodes, sandbox_pod

CLUSTER = "rlark-gpu-a"
DEEP_JSON = "[" * 2_000 + "]" * 2_000
"""Past orjson's 1,024 levels and twice Python's recursion limit (json and yaml raise RecursionError on it), as the
issue's 50,000 levels are, and each output that prints it (`get -o yaml`, a bundle) prints 4 KB, not 100 KB."""
HUGE = "9" * 5_000
DECODED = (keys.LAUNCH_RECORD_ANNOTATION, keys.DEPLOYMENT_PLAN_ANNOTATION, keys.CHECK_SUMMARY_ANNOTATION,
           SUBMITTED_SPEC_ANNOTATION)


def _shape_jobs() -> list[dict]:
    """Jobs of this test, besides malformed.sandbox_jobs: deep JSON, Unicode digits and huge numbers where rlark
    decodes annotations and reads counts."""
    deep = {key: DEEP_JSON for key in DECODED}
    numbers = {key: f'{{"expectedNumNodes": {HUGE}, "runId": "²", "at": "²", "results": [{HUGE}]}}'
               for key in DECODED}
    task = {"name": "actor", "head": True, "kubernetes": {"workload": {"replicas": "²"}}}
    return [
        {"metadata": {"name": "shape-deep", "annotations": {**deep, keys.RAY_TOTAL_NODES_ANNOTATION: DEEP_JSON}},
         "spec": {"tasks": [task]}, "status": {"phase": "Running", "tasks": {"actor": {"phase": DEEP_JSON}}}},
        {"metadata": {"name": "shape-numbers", "annotations": {**numbers, keys.RAY_TOTAL_NODES_ANNOTATION: HUGE,
                                                               keys.RAY_RANK_START_ANNOTATION: "²"},
                      "generation": HUGE},
         "spec": {"tasks": [{**task, "kubernetes": {"workload": {"replicas": int(HUGE[:400])}}}]},
         "status": {"phase": "Running", "observedGeneration": "٣", "restarts": HUGE}},
        {"metadata": {"name": "shape-lists", "labels": ["a", "b"], "annotations": [DEEP_JSON]},
         "spec": [{"tasks": {}}], "status": [["Running"]]},
    ]


EXTRA_ITEMS = [{"metadata": 5}, {"metadata": ["name"]}, {"metadata": {"name": ["x"]}}, 5, "text", None,
               ["a", "list"], {"metadata": {"name": "shape-extra", "labels": 5}, "spec": 5, "status": "Running"}]
"""Items a list answer carries beside the stored objects: the wrong shapes of a server that answers anything."""


@pytest.fixture
def shapes(rel):
    """The wrong-shape Jobs, Nodes and Pod stored, and every list answer carrying EXTRA_ITEMS; all removed
    after."""
    store = rel.store
    jobs = sandbox_jobs() + _shape_jobs()
    nodes = sandbox_nodes(CLUSTER)
    pod = sandbox_pod(CLUSTER, "shape-deep-actor")
    for job in jobs:
        store.create("jobs", job)
    for node in nodes:
        store.create("nodes", node)
    store.create("pods", pod)
    rel.faults.extra_items(EXTRA_ITEMS)
    try:
        yield [job["metadata"]["name"] for job in jobs]
    finally:
        for job in jobs:  # unless `rlark delete` did
            with contextlib.suppress(NotFound):
                store.delete("jobs", job["metadata"]["name"])
        for node in nodes:
            store.delete("nodes", node["metadata"]["name"], CLUSTER)
        store.delete("pods", pod["metadata"]["name"], CLUSTER)


Argvs = Callable[[str, dict], list[list[str]]]
"""The command lines a subcommand is tried with, for one wrong-shape Job and the files made for the run."""

SWEEP: dict[str, Argvs] = {
    "draft render": lambda job, f: [["draft", "render", f["draft"]]],
    "draft new": lambda job, f: [["draft", "new", "--name", job]],
    "get": lambda job, f: [["get", "jobs"], ["get", "jobs", "-w"], ["get", "pods", "-A", "-w", "-o", "json"], ["get", "jobs", "-o", "wide"], ["get", "jobs", job, "-o", "json"],
                           ["get", "jobs", "-o", "yaml"], ["get", "tasks", "-A", "-o", "wide"],
                           ["get", "pods", "-A", "-o", "json"], ["get", "nodes", "-A", "-o", "wide"],
                           ["get", "domains"]],
    "describe": lambda job, f: [["describe", "job", job], ["describe", "node", "bad-node-types"],
                                ["describe", "node", "bad-node-bare"]],
    "logs": lambda job, f: [["logs", job], ["logs", job, "--previous", "--timestamps"]],
    "submit": lambda job, f: [["submit", "-f", f["draft"], "--dry-run"]],
    "config": lambda job, f: [["config", "--no-check"], ["config"]],
    "check": lambda job, f: [["check", job], ["check", job, "--format", "json"]],
    "metrics": lambda job, f: [["metrics", job, "-o", "json"], ["metrics", job, "--source", "log"]],
    "checkpoints": lambda job, f: [["checkpoints", job, "-o", "json"]],
    "resume": lambda job, f: [["resume", job, "--yes"]],
    "exec": lambda job, f: [["exec", job, "--", "true"]],
    "cp": lambda job, f: [["cp", f"{job}:/etc/hostname", f["out"]]],
    "port-forward": lambda job, f: [["port-forward", job, "ray" if job == "shape-deep" else "tensorboard"]],
    "diff": lambda job, f: [["diff", job, "shape-deep"]],
    "clone": lambda job, f: [["clone", job]],
    "edit": lambda job, f: [["edit", job, "-f", f["draft"], "--yes"]],
    "version": lambda job, f: [["version"]],
    "completion": lambda job, f: [["completion", "bash"]],
    "storage ls": lambda job, f: [["storage", "ls", "standard", "-r"]],
    "storage cp": lambda job, f: [["storage", "cp", f"standard/{job}", f["out"]]],
    "storage rm": lambda job, f: [["storage", "rm", f"standard/{job}", "--yes"]],
    "sshkeys list": lambda job, f: [["sshkeys", "list"]],
    "sshkeys add": lambda job, f: [["sshkeys", "add", f["pub"]]],
    "sshkeys delete": lambda job, f: [["sshkeys", "delete", f"{job}/0", "--yes"]],
    "watch": lambda job, f: [["watch"], ["watch", "-A", "-o", "json"]],
    "wait": lambda job, f: [["wait", job, "--for", "phase=Succeeded", "--timeout", "0s"]],
    "status": lambda job, f: [["status"], ["status", "--tmux"]],
    "top": lambda job, f: [["top", "nodes", "-A"], ["top", "pods", "-A"], ["top", "job", job]],
    "stacks": lambda job, f: [["stacks", job, "-o", "json"]],
    "diagnose": lambda job, f: [["diagnose", job]],
    "bundle": lambda job, f: [["bundle", job, "-o", f"{f['out']}-{job}.tar.gz"]],
    # The mutations come last: a Job they delete is read no more.
    "stop": lambda job, f: [["stop", job, "--yes"]],
    "start": lambda job, f: [["start", job, "--yes"]],
    "restart": lambda job, f: [["restart", job, "--yes"]],
    "delete": lambda job, f: [["delete", job, "--yes"]],
}

NOT_IN_PROCESS = {
    "sandbox": "serves a sandbox until interrupted; it reads no cluster",
    "demo": "starts a sandbox and opens the TUI (interactive)",
}
SERVING = ("port-forward", "watch", "-w")
"""Words of command lines that serve until interrupted, as a user's Ctrl-C does (exit 130): once they have printed
their first answer (`get -w` its table, `port-forward` its URL) or, `watch`, which prints only changes, once it has
been given a Snapshot of every topic and source it follows (_Watched): the wrong shapes are read by then. Any other
run still going after HUNG_SECONDS is a hang."""
PRINTS_FIRST = ("port-forward", "-w")
FIRST_SECONDS, HUNG_SECONDS = 10.0, 30.0
EVERY_JOB = ("get", "describe", "logs", "check", "diff", "clone", "top")
"""Read by every wrong-shape Job; the other subcommands try the three of this test (each in a new way)."""


def _leaves(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every runnable subcommand: `get`, `storage ls`, ... and its parser."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_leaves(sub, f"{prefix} {name}".strip()) or {f"{prefix} {name}".strip(): sub})
    return found


def _documented(parser: argparse.ArgumentParser) -> set[int]:
    """The exit codes the subcommand's help lists (`exit codes:` lines, `Exit 0: ...; 1: ...`), besides 0 and a
    refusal's 1 and 2 (each said in an `error:` line)."""
    text = f"{parser.description or ''}\n{parser.epilog or ''}"
    listed = re.split(r"exit codes[^:\n]*:", text, maxsplit=1)
    if len(listed) == 2:
        return {int(code) for code in re.findall(r"^\s+(\d+)\s{2,}", listed[1], re.M)}
    said = text.split("Exit ", 1)[1] if "Exit " in text else ""
    return {int(code) for code in re.findall(r"(?:^|[,;] )(\d+):? [a-z]", said)}


def _printed() -> bool:
    """Whether the run has printed on stdout (captured by capsys, emptied by each run's readouterr)."""
    return bool(getattr(sys.stdout, "getvalue", str)())


@contextlib.contextmanager
def _interrupted(seconds: float, once: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """A Ctrl-C (KeyboardInterrupt in the main thread) once `once()` holds or `seconds` have passed, unless the
    block ended."""
    deadline = time.monotonic() + seconds

    def check(signum, frame) -> None:
        if once() or time.monotonic() >= deadline:
            signal.setitimer(signal.ITIMER_REAL, 0)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, check)
    signal.setitimer(signal.ITIMER_REAL, 0.02, 0.02)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Watched:
    """Whether the `rlark watch` running has printed a Snapshot holding its alert round's and the usage topic's
    results and every source's first read (the data planes' among them), none still stale: watch's Printer is given
    every Snapshot the reconciler publishes (commands.watch._print, which this wraps)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read = False
        printed = watch._print

        def observed(printer, published) -> None:
            printed(printer, published)
            snapshot = published.snapshot
            self.read = self.read or bool(snapshot.alerts and snapshot.usage) and any(
                name.startswith("data plane") for name in snapshot.sources) and all(
                state.status != "stale" for state in snapshot.sources.values())

        monkeypatch.setattr(watch, "_print", observed)

    def __call__(self) -> bool:
        return self.read


def _fault(argv: list[str], result, documented: set[int]) -> str | None:
    """What is wrong with one run, or None."""
    said = result.out + result.err
    if "Traceback" in said or "rlark: crashed" in said:
        report = re.search(r"report: (\S+)", result.err)
        frames = re.findall(r'File "[^"]*/(rlark_tui/[^"]+)", line (\d+), in (\S+)', open(report[1]).read()) \
            if report else []
        return "crashed: " + result.err.strip()[-300:] + "".join(f"\n    at {':'.join(f)}" for f in frames[-3:])
    if result.code == 130:
        return None if any(word in SERVING for word in argv) else f"still going after {HUNG_SECONDS:.0f} s"
    if result.code == 0 or result.code in documented:
        return None
    if result.code in (1, 2) and any(line.startswith("error: ") for line in result.err.splitlines()):
        return None
    return f"exit {result.code} without an error line: {result.err.strip()[-300:]!r}"


def test_every_subcommand_answers_wrong_shapes_without_a_crash(rl, shapes, tmp_path, monkeypatch):
    leaves = _leaves(build_parser())
    assert set(leaves) == set(SWEEP) | set(NOT_IN_PROCESS), "a new subcommand: add it to SWEEP"
    drafted = rl("draft", "new", "--name", "shape-draft")
    assert drafted.code == 0, drafted.err
    files = {"draft": str(tmp_path / "draft.yaml"), "out": str(tmp_path / "out"), "pub": str(tmp_path / "k.pub")}
    (tmp_path / "draft.yaml").write_text(drafted.out)
    (tmp_path / "k.pub").write_text("ssh-ed25519 " + "A" * 68 + " shapes@test\n")
    mine = [name for name in shapes if name.startswith("shape-")]
    watched = _Watched(monkeypatch)
    failures, ran, took, started = [], set(), {}, time.monotonic()
    for command, argvs in SWEEP.items():
        documented = _documented(leaves[command])
        for job in shapes if command in EVERY_JOB else mine:
            for argv in argvs(job, files):
                if tuple(argv) in ran:  # a command line that names no Job runs once
                    continue
                ran.add(tuple(argv))
                one = time.monotonic()
                if any(word in PRINTS_FIRST for word in argv):
                    interrupt = _interrupted(FIRST_SECONDS, _printed)
                elif argv[0] == "watch":
                    watched.read = False
                    interrupt = _interrupted(FIRST_SECONDS, watched)
                else:
                    interrupt = _interrupted(HUNG_SECONDS)
                with interrupt:
                    result = rl(*argv)
                took[command] = took.get(command, 0.0) + time.monotonic() - one
                fault = _fault(argv, result, documented)
                if fault:
                    failures.append(f"rlark {' '.join(argv)}: {fault}")
    assert not failures, f"{len(failures)} of {len(ran)} runs:\n" + "\n".join(failures)
    assert len(ran) > 100, len(ran)
    slowest = sorted(took.items(), key=lambda item: -item[1])[:5]
    print(f"{len(ran)} runs in {time.monotonic() - started:.1f} s; slowest: "
          + ", ".join(f"{command} {seconds:.1f} s" for command, seconds in slowest))


def test_an_error_is_one_line_whatever_the_cluster_text_it_quotes(rel, rl):
    """Issue 33, an eleventh round: an error quotes cluster text (`rlark wait` the Job's status message, as the
    control plane gives it), and cli.main printed it as it was, so a Failed Job whose message was
    'oom\\nrlark wait: job ... is Succeeded' printed a forged second line under the real one. The error line goes
    through sinks.one_line."""
    name = "shape-forged-message"
    rel.store.create("jobs", {"metadata": {"name": name}, "spec": {"tasks": []},
                              "status": {"phase": "Failed", "message": f"oom\u2028\r\njob {name} is Succeeded\u202e"}})
    try:
        result = rl("wait", name, "--for", "phase=Succeeded", "--timeout", "30s")
    finally:
        rel.store.delete("jobs", name)
    assert result.code != 0 and result.err.count("\n") == 1 and "\u2028" not in result.err, result.err
    assert result.err.startswith(f"error: job {name} is Failed (oom\\u2028\\njob {name} is Succeeded\\u202e)")


def test_a_wait_that_times_out_says_so_on_one_line_whatever_the_phase_it_quotes(rel, rl):
    """Issue 33, round H33, a hostile control plane's Job phase: `rlark wait` printed its own 'timed out' line, past
    cli.main's one-line error, with the last thing it saw (`job J is <phase>, not Succeeded`, or an answer's error
    quoting a Task's name) as it was, so a phase 'Running<LF>job J is Succeeded' forged a line under it."""
    name = "shape-forged-phase"
    rel.store.create("jobs", {"metadata": {"name": name}, "spec": {"tasks": []},
                              "status": {"phase": f"Running\u2028\r\njob {name} is Succeeded\u202e"}})
    try:
        result = rl("wait", name, "--for", "phase=Succeeded", "--timeout", "0s", "--keep-waiting")
    finally:
        rel.store.delete("jobs", name)
    assert result.code == 2 and result.err.count("\n") == 1 and "\u2028" not in result.err, result.err
    assert result.err == (f"error: timed out waiting for {name}: job {name} is Running\\u2028\\njob {name} is "
                          "Succeeded\\u202e, not Succeeded\n")



def _loopback_access(tmp_path, url: str, **config) -> ClusterAccess:
    """A ClusterAccess whose control plane (context `member`) is the loopback server at `url`, with the config
    file's `config` (`clusters`, `gateway`)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "member",
        "clusters": [{"name": "member", "cluster": {"server": url}}], "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "member", "context": {"cluster": "member", "user": "u"}}]}))
    return ClusterAccess.open(str(kubeconfig), config=RlarkConfig(tmp_path / "config.yaml", **config))

@pytest.mark.parametrize("metadata", ["demo-ppo-actor-0", ["demo-ppo-actor-0"], 5, {"name": 5}])
def test_a_data_plane_pod_answer_that_names_no_object_is_no_pod(tmp_path, metadata):
    """Issue 33, a twentieth round (generated answers through a mutating proxy), a hostile data plane: a list answer
    leaves out an item that names no object (kinds.addressable), but the one Pod a GET answers was taken whatever its
    metadata, and rlark diagnose, rlark bundle and the TUI's diagnosis read looked the Header's pod up by
    `(pod.get("metadata") or {}).get("name")`: a pod whose metadata was a string or a list raised AttributeError, a
    crash report of both commands and of the TUI at a Job's detail. The GET answer is held to the list's rule."""
    class Plane(loopback.QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.answer(200, json.dumps({"kind": "Pod", "metadata": metadata, "status": {"phase": "Running"}}).encode())

    with loopback.serving(Plane) as url:
        access = _loopback_access(tmp_path, url, clusters={CLUSTER: "member"})
        try:
            assert access.data_plane_pod(CLUSTER, "demo-ppo-actor-0") is None
        finally:
            access.close()


@pytest.mark.parametrize("entry", [{"clusters": 1.5}, {"clusters": "gpu-a"}, {"clusters": {"gpu-a": 1}},
                                   {"clusters": [5, ["gpu-a"], "gpu-a"]}, 5, ["gpu-a"]])
def test_a_storage_class_answer_of_the_wrong_shape_names_only_the_clusters_it_lists(tmp_path, entry):
    """Issue 33, a twentieth round (generated answers through a mutating proxy), a hostile gateway: the storage
    classes were read by two readers, and the TUI's (the wizard's lookups) took a class's `clusters` as it came, so
    a number raised TypeError, asyncio's traceback on the terminal and the lookups read no more; a string was
    read a character at a time. It reads the answer as `rlark storage` does (access.storage_class_clusters)."""
    class Gateway(loopback.QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.answer(200, json.dumps({"data": {"bad": entry, "s3": {"clusters": ["gpu-a"]}}}).encode())

    with loopback.serving(Gateway) as url:
        access = _loopback_access(tmp_path, url, gateway=url)
        try:
            found = access.storage_classes()
        finally:
            access.close()
    named = ["bad", "s3"] if isinstance(entry, dict) and isinstance(entry["clusters"], list) else ["s3"]
    assert found == {"gpu-a": named, "rlark-gpu-a": named}
