"""Read the facts of a Job's first failure and keep them (issue 34 item 3; telemetry/diagnosis.py judges them).

Reads: the Job's Pod CRs and their data-plane pods (container statuses), the Header log (the previous container
too, when the Header restarted: the first crash is in it; so is what Ray forwarded of each worker's output, a dead
rank's fatal error and stack included, which the kubelet keeps after Ray is gone), and through the platform's Ray
route Ray's actors, workers, node IPs and, for each dead worker, its stderr tail from Ray's log API (ray-debug.md),
which Ray serves only while the Header container lives. Each source that cannot be read is one note; the rest
still counts.

Kept: the diagnosis, masked, is written 0600 under the state dir (`diagnosis/<job>.json`, with the Job's UID) the
first time it holds a failure and whenever it learns more, so it still answers once the Pods restarted, Ray
started afresh or the Job was stopped. Beside it, the first failure's excerpt of the dead worker's stderr with that
worker's PID and when it was first kept: a bundle writes it as `ray/stderr/<pid>.err` once Ray no longer serves it.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlark_tui.cluster.errors import ApiError, NotFound, Unreachable
from rlark_tui.errors import RlarkError
from rlark_tui.model import keys
from rlark_tui.model.objects import Job, Pod, dig, main_container_status, restart_count
from rlark_tui.telemetry import diagnosis as pure
from rlark_tui.text.parse import load_json
from rlark_tui.text.sinks import file_name, keyed_name, object_file_name

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess

LogLines = list[tuple[float | None, str]]
RayFacts = tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str], dict[int, str]]

HEADER_TAIL = 20_000
"""Header log lines judged per container instance: the kubelet is asked for one more (`tailLines`), and a log that
has it is said to be longer than what was judged, in one note."""
LINE_CHARS = pure.MAX_LINE_SCAN + len("2006-01-02T15:04:05.000000000Z ")
"""Each line is held cut to this (its timestamp and what the diagnosis scans of it, MAX_LINE_SCAN)."""
LINE_HOLD = sys.getsizeof("\U0001f600" * LINE_CHARS)
"""The most one such line takes as a string."""
HEADER_BYTES = (HEADER_TAIL + 1) * LINE_HOLD
"""The most a read holds of its lines, the newest (309 MiB, a smaller tail's lines a smaller part: the TUI's 2,000
31 MiB): a real kubelet's tail, cut to what is judged, is never cut by it (its 16 KiB entries made lines that the
32 MiB bound this was left out); a data plane's lines of 16 MiB (http.MAX_LINE_BYTES) were 320 GiB held. Past it one
note says so."""
STDERR_LINES = 200
MAX_TAILS = 32
"""The most dead workers whose stderr tail is read (a request each, up to client.MAX_TEXT_BYTES): a head listing
10,000 dead actors is not 10,000 requests and 40 GB of tails. The first failure is among the first dead."""
PARALLEL = 8
KEPT_DIR = "diagnosis"
MAX_KEPT_BYTES = 4 * 1024 * 1024
KEPT_PER_CONTEXT = 1000
"""The first failures kept per context, the newest: rlark watch keeps one for each Job a critical alert fires on, and
a control plane whose Jobs crash under new names every second made a file a second for as long as it ran."""


@dataclass
class Read:
    """What one diagnose read: the diagnosis (merged with the kept one) and what could not be read."""

    diagnosis: pure.Diagnosis
    notes: list[str] = field(default_factory=list)
    kept: bool = False
    """The answer includes evidence kept from an earlier read."""


@dataclass(frozen=True)
class KeptStderr:
    """The first failure's excerpt of a dead worker's stderr as kept (masked) the first time it was seen: Ray drops
    that stderr once the Header container exits, so a bundle taken later writes this instead."""

    pid: int
    worker: str
    kept_at: float
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Kept:
    diagnosis: pure.Diagnosis
    stderr: KeptStderr | None = None


def kept_path(state_dir: Path, job: str, context: str) -> Path:
    """Where the first failure of `job` of `context` is kept: a directory per context (sinks.keyed_name), so a Job
    of the same name in another context (another cluster's, or a hostile control plane's) neither replaces it nor
    is shown for it."""
    return Path(state_dir) / KEPT_DIR / keyed_name(context, 80) / f"{object_file_name(job)}.json"


def read_kept(state_dir: Path, job: str, uid: str | None = None, *, context: str,
              notes: list[str] | None = None) -> Kept | None:
    """The kept diagnosis of `job` (of the Job with `uid`, when given: a Job made again under the same name starts
    afresh) and its kept stderr excerpt; None when there is none or it cannot be read (fsutil.read_own: one another
    user planted or linked in a shared state directory, a FIFO or a device, is none).

    A record an earlier rlark kept is read where it kept it: in the context's directory by `file_name` of the name
    (before 5545ab5; the name inside the record tells Jobs apart), and in `diagnosis/` itself (before beb1198, one
    record per name for every context) only when it is of the Job with `uid`: any other context's Job of that name
    could have written it, so without the uid it is not shown for this Job, and a line in `notes` says so."""
    path = kept_path(state_dir, job, context)
    found = _read_kept_file(path, job, uid)
    earlier = path.with_name(f"{file_name(job)}.json")
    if found is None and earlier != path:
        found = _read_kept_file(earlier, job, uid)
    if found is not None:
        return found
    shared = Path(state_dir) / KEPT_DIR / f"{file_name(job)}.json"
    found = _read_kept_file(shared, job, uid, same_uid=True)
    if found is None and notes is not None and _read_kept_file(shared, job, None) is not None \
            and (not uid or _first_notice(state_dir, shared)):  # a Job gone: the note is the answer, every time
        notes.append(f"a first failure of a Job {job} that an earlier rlark kept for every context ({shared}) is not "
                     "shown: it names no context" + (" and is another Job's (another uid)" if uid else
                                                      ", and the Job is gone, so no uid tells whose it is"))
    return found


NOTED_FILE = "noted+shared.json"
"""The records for every context already said not shown (`_first_notice`): a name `file_name` never makes ('+'),
so no Job's record."""
MAX_NOTED = 256


def _first_notice(state_dir: Path, record: Path) -> bool:
    """Whether the note that the record for every context at `record` is not shown is said for the first time: a Job
    made again under that name is diagnosed over and over, and the same line each time said nothing new. Each
    record said is remembered by its content's sha256 in NOTED_FILE (the newest MAX_NOTED), kept by the one
    writer; when that cannot be read or written, the note is said again."""
    import hashlib

    from rlark_tui.local.fsutil import read_own, write_private

    try:
        digest = hashlib.sha256(read_own(record, MAX_KEPT_BYTES)).hexdigest()
    except OSError:
        return True
    path = Path(state_dir) / KEPT_DIR / NOTED_FILE
    try:
        listed = load_json(read_own(path, MAX_NOTED * 80))
    except (OSError, ValueError):
        listed = []
    noted = [key for key in listed if isinstance(key, str)] if isinstance(listed, list) else []
    if digest in noted:
        return False
    try:
        write_private(path, json.dumps([*noted, digest][-MAX_NOTED:]) + "\n", durable=False)
    except (OSError, RlarkError):
        pass
    return True


def _read_kept_file(path: Path, job: str, uid: str | None, same_uid: bool = False) -> Kept | None:
    """The record at `path` if it is of `job` (the name as kept, not as shown) and of `uid` (when given; with
    `same_uid`, only a record that names that uid)."""
    from rlark_tui.local.fsutil import read_own

    try:
        data = load_json(read_own(path, MAX_KEPT_BYTES), max_bytes=MAX_KEPT_BYTES)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or (uid and data.get("uid") and data.get("uid") != uid) or \
            (same_uid and (not uid or data.get("uid") != uid)):
        return None
    kept = data.get("diagnosis")
    found = pure.from_json(kept)
    if found is None or not isinstance(kept, dict) or kept.get("job") != job:
        return None
    return Kept(found, _stderr_from_json(data.get("stderr")))


def load_kept(state_dir: Path, job: str, uid: str | None = None, *, context: str,
              notes: list[str] | None = None) -> pure.Diagnosis | None:
    kept = read_kept(state_dir, job, uid, context=context, notes=notes)
    return kept.diagnosis if kept is not None else None


def _stderr_from_json(data: Any) -> KeptStderr | None:
    if not isinstance(data, dict):
        return None
    pid, at, lines = data.get("pid"), pure.rfc3339(data.get("kept_at")), data.get("lines")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or at is None or not isinstance(lines, list):
        return None
    failure = pure.from_json({"job": "", "first_failure": {"worker": data.get("worker"), "evidence": lines}})
    if failure is None or failure.first_failure is None:
        return None
    return KeptStderr(pid, failure.first_failure.worker, at, failure.first_failure.evidence)


def kept_stderr(diagnosis: pure.Diagnosis, previous: KeptStderr | None, now: float) -> KeptStderr | None:
    """The stderr excerpt to keep beside `diagnosis`: its first failure's, kept at `now` unless it was kept before."""
    failure = diagnosis.first_failure
    if failure is None:
        return None
    if previous is not None and previous.worker == failure.worker and (
            previous.pid == failure.pid or (not failure.pid and previous.lines == failure.evidence)):
        return previous
    return KeptStderr(failure.pid, failure.worker, now, failure.evidence) if failure.pid and failure.evidence \
        else None


def keep(state_dir: Path, uid: str, diagnosis: pure.Diagnosis, stderr: KeptStderr | None = None, *,
         context: str) -> None:
    from rlark_tui.local.fsutil import keep_newest, write_private

    payload: dict[str, Any] = {"uid": uid, "diagnosis": pure.to_json(diagnosis)}
    if stderr is not None:
        payload["stderr"] = {"pid": stderr.pid, "worker": stderr.worker, "kept_at": pure.iso(stderr.kept_at),
                             "lines": list(stderr.lines)}
    path = kept_path(state_dir, diagnosis.job, context)
    write_private(path, json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
    keep_newest(path.parent, ".json", KEPT_PER_CONTEXT)


def remember(state_dir: Path, uid: str, kept: Kept | None, now: pure.Diagnosis, notes: list[str], *,
             context: str) -> Kept:
    """`now` joined with the kept diagnosis, kept again when it knows a failure and learnt more; what is kept."""
    merged = pure.merge(kept.diagnosis if kept else None, now)
    previous = kept.stderr if kept else None
    stderr = kept_stderr(merged, previous, time.time())
    if merged.first_failure is not None and (
            pure.to_json(merged) != (pure.to_json(kept.diagnosis) if kept else None) or stderr != previous):
        try:
            keep(state_dir, uid, merged, stderr, context=context)
        except (OSError, RlarkError) as exc:
            notes.append(f"the evidence could not be kept: {exc}")
    return Kept(merged, stderr)


def diagnose(access: ClusterAccess, name: str, state_dir: Path, tail: int | None = None) -> Read:
    """Read the Job's facts now (the Header log's last `tail` lines per container instance), join them with the
    kept ones, keep the result when it knows a failure."""
    try:
        job = access.job(name)
    except NotFound:
        skipped: list[str] = []
        gone = load_kept(state_dir, name, context=access.context, notes=skipped)
        if gone is None:
            raise RlarkError(f"diagnose: Job {name} does not exist and no evidence of it was kept"
                             + "".join(f"; {line}" for line in skipped)) from None
        return Read(gone, [f"Job {name} does not exist: the evidence kept when it was first seen"], kept=True)
    notes: list[str] = []
    inputs = gather(access, job, notes, tail)
    now = pure.diagnose(inputs)
    kept = read_kept(state_dir, name, job.uid, context=access.context, notes=notes)
    merged = remember(state_dir, job.uid, kept, now, notes, context=access.context).diagnosis
    old = kept.diagnosis if kept else None
    used_kept = old is not None and merged.first_failure is not None \
        and _plain(merged.first_failure) == _plain(old.first_failure) != _plain(now.first_failure)
    return Read(merged, notes, kept=used_kept)


def _plain(failure: pure.Failure | None) -> pure.Failure | None:
    """A failure as to_json shows it (the PID of its stderr aside)."""
    return replace(failure, pid=0) if failure is not None else None


def gather(access: ClusterAccess, job: Job, notes: list[str], tail: int | None = None) -> pure.Inputs:
    from rlark_tui.cluster.access import parallel_map
    from rlark_tui.cluster.secrets import pods_secrets

    tasks: list[dict[str, Any]] = []
    try:
        tasks = access.job_tasks(job.name)
        crs = [Pod(raw) for raw in access.job_pods(job.name, tasks)]
    except (ApiError, Unreachable) as exc:
        crs = []
        notes.append(f"Pods: {exc}")

    def real(cr: Pod) -> dict[str, Any] | None:
        try:
            return access.data_plane_pod(cr.cluster, cr.pod_name, cr.pod_namespace or keys.WORKLOAD_NAMESPACE)
        except (ApiError, Unreachable) as exc:
            notes.append(f"Pod {cr.pod_name}: {exc}")
            return None

    named = [cr for cr in crs if cr.pod_name]
    pods = [pod for pod in parallel_map(real, named) if pod is not None] if named else []
    from rlark_tui.cluster.metrics import header_pod

    head = header_pod([cr for cr in named if cr.task_name == job.head_task_name])
    header = _header_log(access, head, pods, notes, HEADER_TAIL if tail is None else tail) if head is not None else []
    actors, workers, ips, stderr = _ray(access, job, notes)
    known = pods_secrets(access, job.raw, named, tasks, {str(dig(pod, "metadata", "name") or ""): pod for pod in pods})
    if known.unreadable:
        notes.append(known.notice())
    return pure.Inputs(job.name, pods=pods, actors=actors, workers=workers, node_ips=ips, stderr=stderr,
                       header_log=header, header=head.pod_name if head is not None else "", known=known.values)


def _header_log(access: ClusterAccess, head: Pod, pods: list[dict[str, Any]], notes: list[str],
                tail: int) -> LogLines:
    """The Header's log, the previous container's too when it restarted; with Ray's default log_to_driver (RLinf's
    ray.init) it holds each worker's output as Ray forwarded it, a dead rank's fatal error and stack included."""
    real = next((pod for pod in pods if (pod.get("metadata") or {}).get("name") == head.pod_name), None)
    restarts = restart_count(main_container_status(real)) if real else None
    lines: LogLines = []
    for previous in ((True, False) if restarts else (False,)):
        try:
            lines += _read(access, head, previous, tail, notes)
        except (ApiError, Unreachable) as exc:
            notes.append(f"the Header log{' (previous container)' if previous else ''}: {exc}")
    return lines


def _read(access: ClusterAccess, head: Pod, previous: bool, tail: int, notes: list[str]) -> LogLines:
    from rlark_tui.cluster.logmerge import split_raw
    from rlark_tui.model.quantity import size_text

    which = f"the Header log{' (previous container)' if previous else ''}"
    bound = min(HEADER_BYTES, (tail + 1) * LINE_HOLD)
    stream = access.pod_log(head.cluster, head.pod_name, namespace=head.pod_namespace or keys.WORKLOAD_NAMESPACE,
                            tail=tail + 1, timestamps=True, previous=previous, read_timeout=30, tail_bytes=bound,
                            line_chars=LINE_CHARS)
    out: LogLines = []
    for raw in stream:
        _stamp, ns, text = split_raw(raw)
        out.append((ns / 1e9 if ns is not None else None, text))
    longer = len(out) > tail
    if longer:
        del out[:len(out) - tail]
    left_out = getattr(stream, "left_out", 0)  # a LineStream's; an access that lists lines (a bundle's) held them
    if left_out:
        notes.append(f"{which}: its last {len(out):,} lines read and {left_out:,} before them left out, to hold at "
                     f"most {size_text(bound)} (diagnose's bound on a container's log)")
    elif longer:
        notes.append(f"{which}: longer than its last {tail:,} lines, which are what was read and judged "
                     "(diagnose's tail): a failure before them is not")
    return out


def _ray(access: ClusterAccess, job: Job, notes: list[str]) -> RayFacts:
    from rlark_tui.cluster.access import parallel_map

    dashboard = access.ray_dashboard(job)
    if dashboard is None:
        notes.append(f"Ray: no way to the Ray dashboard of {job.name} "
                     f"({access.server_problem or 'no Header role, or no rlark-server'})")
        return [], [], {}, {}
    query = [("detail", "true"), ("limit", "10000")]
    try:
        actors = dashboard.state_list("actors", "Ray actors", query)
        workers = dashboard.state_list("workers", "Ray workers", query)
        ips = dashboard.node_ips()
    except (ApiError, Unreachable) as exc:
        notes.append(f"Ray: {exc}")
        return [], [], {}, {}
    dead = _dead_workers(actors, workers)

    def tail(item: tuple[str, int]) -> tuple[int, str | None]:
        node_id, pid = item
        try:
            text = dashboard.text("/api/v0/logs/file", "a worker's stderr",
                                  [("node_id", node_id), ("pid", str(pid)), ("suffix", "err"),
                                   ("lines", str(STDERR_LINES))])
            return pid, "\n".join(text.splitlines()[-STDERR_LINES:])  # as many lines as asked, whatever came
        except (ApiError, Unreachable) as exc:
            notes.append(f"Ray: the stderr of worker {pid}: {exc}")
            return pid, None

    if len(dead) > MAX_TAILS:
        notes.append(f"Ray: {len(dead):,} dead workers; the stderr of the first {MAX_TAILS} read")
    dead = dead[:MAX_TAILS]
    stderr = {pid: text for pid, text in (parallel_map(tail, dead, PARALLEL) if dead else []) if text}
    return actors, workers, ips, stderr


def _dead_workers(actors: list[dict[str, Any]], workers: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(node ID, PID) of each actor that died of something other than its references or owner going, and of each
    worker that exited with an error."""
    found: dict[int, str] = {}
    for actor in actors:
        message = str(dig(actor, "death_cause", "actor_died_error_context", "error_message") or "")
        if actor.get("state") == "DEAD" and isinstance(actor.get("pid"), int) and actor["pid"] \
                and not any(mark in message for mark in pure.GONE_MARKS):
            found.setdefault(actor["pid"], str(actor.get("node_id") or ""))
    for worker in workers:
        if worker.get("exit_type") in pure.FAILED_EXITS and isinstance(worker.get("pid"), int) and worker["pid"]:
            found.setdefault(worker["pid"], str(worker.get("node_id") or ""))
    return [(node, pid) for pid, node in found.items() if node]
