"""Ray's and Kubernetes' answers recorded from the sandbox (Ray 2.60) for a demo run whose rank 1 was killed by
SIGSEGV (`RLARK_DEMO_FAULT=sigsegv:1`, four ranks): data/sigsegv/ holds the State API's actors and workers,
`/nodes?view=summary` (trimmed to the node IDs and IPs), rank 1's stderr from the log API (PID 812), the Header
Pod as the data plane answered after the container exited, and the Header log as the kubelet keeps it (CRI
lines); header-forwarded.log is the Header's previous container log of such a run with Ray forwarding the workers'
output to the driver (as RLinf's ray.init does; rank 1 is PID 16929 there): Ray's `(ActorGroup(rank=1) pid=16929)`
lines hold the rank's fatal error and stack. data/hang/ holds a hung run's (`RLARK_DEMO_FAULT=hang:2`, four ranks, step 2) `py-spy dump` of each rank,
as the fixed `py-spy-dump` printed it in the Pod, and each rank's actor name, class, PID, Pod and node.
data/cudaoom/ and data/hostoom/ hold what raydash/diagnose.py's gather read (inputs.json: the data-plane pods,
Ray's actors, workers and node IPs, the dead workers' stderr, the Header log) from two demo runs side by side once
`rlark diagnose` named their OOM: `RLARK_DEMO_FAULT=cudaoom:1` (rank 1 raises PyTorch's CUDA OOM; the driver prints
RLinf's crash chain with the rank's traceback) and `hostoom:1` with ranks 1 and 3 on a `rollout` Pod limited to
2 GiB (rank 1 grows past it; the sandbox's kubelet kills the container and says OOMKilled)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from rlark_tui.telemetry import stacks
from rlark_tui.telemetry.diagnosis import Inputs

DATA = Path(__file__).parent / "data" / "sigsegv"
HANG = Path(__file__).parent / "data" / "hang"
CRASHED_PID = 812


def _json(name: str):
    return json.loads((DATA / name).read_text())


def cri_lines(text: str) -> list[tuple[float | None, str]]:
    """`<RFC3339 nano> stdout F <text>` lines as (epoch seconds, text)."""
    lines = []
    for raw in text.splitlines():
        stamp, _stream, _tag, line = (raw.split(" ", 3) + ["", "", ""])[:4]
        lines.append((datetime.fromisoformat(stamp[:26].rstrip("Z") + "+00:00").timestamp(), line))
    return lines


def sigsegv_inputs(**changes) -> Inputs:
    nodes = _json("nodes.json")["summary"]
    facts = {"job": "segv", "pods": _json("corepods.json"), "actors": _json("actors.json"),
             "workers": _json("workers.json"), "node_ips": {n["raylet"]["nodeId"]: n["ip"] for n in nodes},
             "stderr": {CRASHED_PID: (DATA / f"err-{CRASHED_PID}.txt").read_text()},
             "header_log": cri_lines((DATA / "header.log").read_text())}
    return Inputs(**{**facts, **changes})


def forwarded_inputs() -> Inputs:
    """What diagnose reads of that run once Ray is gone: the Header Pod (`segv-actor-0` on gpu-a3; its container
    statuses left out) and the previous container's log, no actors, workers or stderr."""
    pod = {"metadata": {"name": "segv-actor-0"}, "spec": {"nodeName": "gpu-a3"}, "status": {"podIP": "127.204.0.4"}}
    return Inputs("segv", pods=[pod], header="segv-actor-0",
                  header_log=cri_lines((DATA / "header-forwarded.log").read_text()))


def recorded_inputs(case: str) -> Inputs:
    """`cudaoom` or `hostoom`: the facts gather read, as Inputs."""
    data = json.loads((DATA.parent / case / "inputs.json").read_text())
    return Inputs(data["job"], pods=data["pods"], actors=data["actors"], workers=data["workers"],
                  node_ips=data["node_ips"], stderr={int(pid): text for pid, text in data["stderr"].items()},
                  header_log=[(at, line) for at, line in data["header_log"]])


def hang_workers() -> list[stacks.Worker]:
    """The hung run's four ranks with their parsed dumps (rank 2 in next_batch, the others in allreduce)."""
    return [stacks.Worker(w["name"], w["class"], w["pid"], w["pod"], w["node"],
                          stacks.parse_dump((HANG / f"dump-{w['pid']}.txt").read_text()))
            for w in json.loads((HANG / "workers.json").read_text())]
