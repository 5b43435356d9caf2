"""Container logs written as containerd's CRI logger writes them and served as the kubelet serves them
(tests/../docs/routes.md, sandbox notes): the entry format and its P/F rules on the runtime side, then the log API
through the real kubernetes client over HTTPS: partial lines without a newline, timestamps only where a line
starts, tailLines counting entries, sinceTime per entry, limitBytes, and a follow that hands out partial content
as it lands. File modes: 0600 files in 0700 directories."""

from __future__ import annotations

import re
import stat
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes import client

from rlark_sandbox.logs import MAX_LINE, LogStore
from tests.sandbox.helpers import data_plane_api
from tests.sandbox.test_dataplane import data_pod

CLUSTER, NS = "rlark-gpu-a", "rlark-system"
ENTRY = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z (stdout|stderr) (P|F) (.*)$", re.S)


def entries(path) -> list[tuple[str, str, bytes]]:
    found = []
    for line in path.read_bytes().split(b"\n")[:-1]:
        match = ENTRY.match(line)
        assert match, line[:80]
        found.append((match.group(2).decode(), match.group(3).decode(), match.group(4)))
    return found


def test_runtime_side_entries_and_modes(tmp_path):
    logs = LogStore(tmp_path / "logs")
    args = (CLUSTER, NS, "cri-0", "main")
    logs.start_instance(*args)
    writer = logs.writer(*args)
    path = logs.path(*args, 0)
    writer.feed("stdout", b"one\r\ntwo\nhalf ")
    writer.feed("stderr", b"err\n")
    writer.feed("stdout", b"done\n")
    assert entries(path) == [("stdout", "F", b"one"), ("stdout", "F", b"two"), ("stderr", "F", b"err"),
                             ("stdout", "F", b"half done")]
    writer.feed("stdout", b"x" * MAX_LINE + b"\n" + b"y" * (2 * MAX_LINE + 5) + b"\n")
    assert [(tag, len(content)) for _, tag, content in entries(path)[4:]] == [
        ("F", MAX_LINE), ("P", MAX_LINE), ("P", MAX_LINE), ("F", 5)]
    bar = "".join(f"\rGlobal Step: {n:3d}%|{'█' * 500}| {n}/100" for n in range(40)).encode()
    writer.feed("stderr", bar)  # a redrawn bar never sends a newline: only whole 16 KiB pieces are written
    assert [(s, t, len(c)) for s, t, c in entries(path)[8:]] == [("stderr", "P", MAX_LINE)] * (len(bar) // MAX_LINE)
    writer.close()  # the container stopped: the rest goes out as a partial entry
    last = entries(path)[-1]
    assert last[:2] == ("stderr", "P") and b"".join(c for s, _, c in entries(path)[8:]) == bar
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for directory in (path.parent, path.parent.parent, tmp_path / "logs" / CLUSTER):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory


@pytest.fixture(scope="module")
def core(bare_sandbox):
    return client.CoreV1Api(data_plane_api(bare_sandbox, CLUSTER))


@pytest.fixture(scope="module")
def partial_pod(bare_sandbox):
    """A pod whose log holds an old line, a line split in 16 KiB pieces and an unterminated progress bar."""
    sb = bare_sandbox
    sb.store.create("pods", data_pod("cri-api-0"), plane=CLUSTER)
    args = (CLUSTER, NS, "cri-api-0", "main")
    sb.logs.start_instance(*args)
    sb.logs.append(*args, "an hour ago", when=datetime.now(UTC) - timedelta(hours=1))
    writer = sb.logs.writer(*args)
    writer.feed("stdout", b"L" * (MAX_LINE + 10) + b"\n")
    writer.feed("stderr", b"\rbar 1/3" + b"." * MAX_LINE + b"\rbar 2/3")
    return writer


def test_api_partial_lines_timestamps_tail_since_limit(core, partial_pod):
    pod = "cri-api-0"
    whole = core.read_namespaced_pod_log(pod, NS, container="main")
    assert whole.startswith("an hour ago\n" + "L" * (MAX_LINE + 10) + "\n\rbar 1/3")
    assert not whole.endswith("\n"), "the partial entry is served without a newline"
    stamped = core.read_namespaced_pod_log(pod, NS, container="main", timestamps=True)
    assert len(re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ", stamped)) == 3  # one per line, not per entry
    assert core.read_namespaced_pod_log(pod, NS, tail_lines=1) == "\rbar 1/3" + "." * (MAX_LINE - 8)
    assert core.read_namespaced_pod_log(pod, NS, tail_lines=2).endswith("L" * 10 + "\n\rbar 1/3" + "." * (MAX_LINE - 8))
    recent = core.read_namespaced_pod_log(pod, NS, since_seconds=600)
    assert recent.startswith("L") and "an hour ago" not in recent
    assert core.read_namespaced_pod_log(pod, NS, limit_bytes=5) == "an ho"


def test_follow_serves_partial_content_as_it_lands(core, partial_pod, bare_sandbox):
    response = core.read_namespaced_pod_log("cri-api-0", NS, container="main", follow=True, tail_lines=1,
                                            _preload_content=False)
    got = []
    reader = threading.Thread(target=lambda: [got.append(chunk) for chunk in response.stream(4096)], daemon=True)
    reader.start()
    partial_pod.feed("stderr", b"." * MAX_LINE)  # the next 16 KiB of the bar: a P entry, no newline anywhere

    def received() -> bytes:
        return b"".join(got)
    deadline = time.monotonic() + 10
    while received().count(b"bar 2/3") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert b"\rbar 2/3" in received() and b"\n" not in received()
    partial_pod.close()  # the container stops: its unterminated rest is a last partial entry, then the follow ends
    bare_sandbox.logs.end_instance(CLUSTER, NS, "cri-api-0", "main", 0)
    reader.join(10)
    assert not reader.is_alive() and received().endswith(b"." * MAX_LINE) and b"\n" not in received()
