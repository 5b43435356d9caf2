"""Reading a Job's training numbers: the progress row of its Header Pod's log, and scalar series from the
Header Task's TensorBoard through the gateway (`tasks/<task>/tensorboard/data/...`) or else from that log.

I/O only; the parsing is telemetry/progress.py, and which Pod is the Header's comes from a SnapshotIndex (the
reconciler's, or one built from a live list). Every failure is a one-line MetricsUnavailable (an RlarkError).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from rlark_tui.cluster.access import parallel_map
from rlark_tui.cluster.errors import ApiError, Request, Unreachable
from rlark_tui.cluster.http import seg, tail_bytes, tail_left_out
from rlark_tui.cluster.kinds import PODS
from rlark_tui.cluster.logmerge import split_raw
from rlark_tui.cluster.transport import decode_json
from rlark_tui.errors import RlarkError
from rlark_tui.flow.snapshot import Snapshot
from rlark_tui.model.objects import Job, Pod
from rlark_tui.telemetry.curves import MetricsResult, MetricsState
from rlark_tui.telemetry.progress import MAX_TAGS, Point, Progress, latest_progress, metric_series, scalar_points
from rlark_tui.telemetry.steptime import breakdown, step_time_cell
from rlark_tui.view.index import SnapshotIndex

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.http import Http

MAX_ANSWER_BYTES = 8 << 20
"""A TensorBoard answer larger than this is refused (a clear state, not a frozen plot)."""
MAX_POINTS = 2000
"""Points kept per series (evenly thinned, the last one always kept): enough for any terminal width."""
PROGRESS_TAIL_LINES = 200
"""An embodied metric table is about 20 lines; 200 holds the newest one even with other output between."""
PROGRESS_TAIL_BYTES = tail_bytes(PROGRESS_TAIL_LINES)
"""The most such a read holds (13 MiB, the newest lines): what a kubelet's 200 lines may take, where a data plane's
200 lines of 16 MiB (http.MAX_LINE_BYTES) were 3.2 GiB."""
PROGRESS_SECONDS = 10.0
"""The reconciler reads a Running Job's progress this often."""
PROGRESS_SINCE_SECONDS = 600
"""A poll reads only this recent log (`sinceSeconds`); without a row in it the last one found is kept (stale)."""
SERIES_TAIL_LINES = 20000
SERIES_TAIL_BYTES = tail_bytes(SERIES_TAIL_LINES)
"""The most the series' read holds (1,254 MiB, the newest lines; the note says what it left out): a kubelet's 20,000
lines may take that much as strings, a data plane's 20,000 lines of 16 MiB (http.MAX_LINE_BYTES) were 320 GiB held at
every Metrics poll."""
SOURCES = ("auto", "tensorboard", "log")


class MetricsUnavailable(RlarkError):
    """No numbers from the asked source, with the reason in one line."""


@dataclass(frozen=True)
class Header:
    """Where a Job's numbers live: its Header Task and that Task's Pod (cluster namespace, local name)."""
    job: str
    task: str
    cluster: str
    pod: str
    tensorboard_dir: str = ""


def header_pod(pods: list[Pod]) -> Pod | None:
    """The Pod CR the platform's TensorBoard route picks among one Task's Pods (`SnapshotIndex.pods_by_task`):
    the first Running Pod with a local name, else the first with one."""
    named = [pod for pod in pods if pod.pod_name]
    running = [pod for pod in named if pod.phase == "Running"]
    return running[0] if running else named[0] if named else None


def _header(job: Job, pod: Pod) -> Header:
    return Header(job.name, job.head_task_name, pod.namespace, pod.pod_name,
                  job.head_task.tensorboard_dir if job.head_task is not None else "")


def find_header(access: ClusterAccess, job_name: str) -> Header:
    job = access.job(job_name)
    head = job.head_task
    if head is None:
        raise MetricsUnavailable(f"metrics: Job {job_name} has no Header role, so no Header log or TensorBoard")
    task_name = job.head_task_name
    tasks = [t for t in access.job_tasks(job_name) if (t.get("metadata") or {}).get("name") == task_name]
    if not tasks:
        raise MetricsUnavailable(f"metrics: Task {task_name} of Job {job_name} does not exist yet")
    pod = header_pod([pod for pod in map(Pod, access.job_pods(job_name, tasks)) if pod.task_name == task_name])
    if pod is None:
        raise MetricsUnavailable(f"metrics: the Header Task {task_name} has no Pod yet")
    return _header(job, pod)


class LogRead(NamedTuple):
    lines: list[tuple[float | None, str]]
    """(epoch seconds, text), oldest first."""
    left_out: str
    """What the read left out to hold at most its bound, in one line ('' when nothing)."""


def read_log(access: ClusterAccess, cluster: str, pod: str, tail: int, held: int,
             since_seconds: int | None = None) -> LogRead:
    """The newest `tail` lines of the Pod's `main` log (with `sinceSeconds`) whose strings take at most `held`
    bytes."""
    stream = access.pod_log(cluster, pod, tail=tail, since_seconds=since_seconds, timestamps=True, read_timeout=30,
                            tail_bytes=held)
    lines = []
    for raw in stream:
        _stamp, ns, text = split_raw(raw)
        lines.append((ns / 1e9 if ns is not None else None, text))
    return LogRead(lines, tail_left_out(stream))


def read_progress(access: ClusterAccess, cluster: str, pod: str, since_seconds: int | None = None
                  ) -> tuple[Progress | None, str]:
    """The newest progress row of the Header log's last PROGRESS_TAIL_LINES, and what the read left out ('')."""
    lines, left_out = read_log(access, cluster, pod, PROGRESS_TAIL_LINES, PROGRESS_TAIL_BYTES, since_seconds)
    return latest_progress(lines), left_out


class WideCells(NamedTuple):
    """`get jobs -o wide`'s log cells, Job name -> text: PROGRESS and STEP TIME, and what each Job's read of its
    Header log left out to hold at most its bound (tail_left_out's line; only Jobs whose read left some out)."""
    progress: dict[str, str]
    step_time: dict[str, str]
    left_out: dict[str, str]


def wide_log_cells(access: ClusterAccess, jobs: list[dict[str, Any]]) -> WideCells:
    """The progress text (`step/total percent ETA`, `(stale)`) and the STEP TIME cell
    (telemetry.steptime.step_time_cell) of the Running Jobs among `jobs` whose Header log has them: one list of Pod CRs, then one read of the last
    PROGRESS_TAIL_LINES log lines per Running Job (the newest progress row and metric table are among them)."""
    running = [Job(j) for j in jobs if Job(j).phase == "Running" and Job(j).head_task is not None]
    if not running:
        return WideCells({}, {}, {})
    try:
        pods = access.list(PODS).items
    except (ApiError, Unreachable):
        return WideCells({}, {}, {})
    index = SnapshotIndex(Snapshot(pods={f"{Pod(p).namespace}/{Pod(p).name}": p for p in pods}))

    def one(job: Job) -> tuple[str, str, str, str]:
        pod = header_pod(index.pods_by_task.get(job.head_task_name, []))
        if pod is None:
            return job.name, "", "", ""
        try:
            lines, left_out = read_log(access, pod.namespace, pod.pod_name, PROGRESS_TAIL_LINES, PROGRESS_TAIL_BYTES)
        except (ApiError, Unreachable):
            return job.name, "?", "?", ""
        row = latest_progress(lines)
        step_time = breakdown(metric_series(lines).points)
        return (job.name, row.render(time.time()) if row else "", step_time_cell(step_time) if step_time.steps else "",
                left_out)

    cells = parallel_map(one, running)
    return WideCells({name: text for name, text, _, _ in cells if text},
                     {name: text for name, _, text, _ in cells if text},
                     {name: said for name, _, _, said in cells if said})


def thin(points: list[Point], limit: int = MAX_POINTS) -> list[Point]:
    if len(points) <= limit:
        return points
    stride = len(points) / (limit - 1)
    kept = [points[int(i * stride)] for i in range(limit - 1)]
    return kept + [points[-1]]


def _get(gateway: Http, path: str, what: str) -> object:
    """One TensorBoard data request through the gateway, bounded in size; JSON or MetricsUnavailable."""
    try:
        stream = gateway.stream(path, Request("get", "tensorboard", source="gateway"), read_timeout=30, ends=True)
        chunks, size = [], 0
        for line in stream:
            size += len(line) + 1
            if size > MAX_ANSWER_BYTES:
                stream.close()
                raise MetricsUnavailable(f"TensorBoard's answer for {what} is larger than "
                                         f"{MAX_ANSWER_BYTES >> 20} MB; not read")
            chunks.append(line)
    except ApiError as exc:
        raise MetricsUnavailable(f"TensorBoard via the gateway answered {exc.status or 'an error'} for {what}") from exc
    except Unreachable as exc:
        raise MetricsUnavailable(f"TensorBoard via the gateway: {exc}") from exc
    text = "\n".join(chunks).strip()
    if text.startswith("<"):
        raise MetricsUnavailable(f"TensorBoard via the gateway answered HTML, not data, for {what}")
    try:
        return decode_json(text, text=False)
    except ValueError:
        raise MetricsUnavailable(f"TensorBoard via the gateway answered something that is not JSON for {what}") from None


def tensorboard_series(access: ClusterAccess, task: str, tags: list[str] | None = None
                       ) -> tuple[dict[str, list[Point]], str]:
    """Scalar series of every run of the Task's TensorBoard (run `.` is the log dir itself; other runs get a
    `run/` prefix), only `tags` when given, and a note ('' or what was left out). At most MAX_TAGS series are read
    (one request each, in name order), each thinned as it comes (MAX_POINTS)."""
    gateway = access.gateway_http()
    if gateway is None:
        raise MetricsUnavailable("TensorBoard: no gateway configured — see `rlark config`")
    base = f"/api/v1/rlinf.io/v1alpha1/tasks/{seg(task)}/tensorboard/data/plugin/scalars"
    runs = _get(gateway, base + "/tags", "the tag list")
    if not isinstance(runs, dict):
        raise MetricsUnavailable("TensorBoard's tag list is not a mapping of runs to tags")
    counted = [0]

    def every() -> Iterator[tuple[str, str, str]]:
        for run, run_tags in runs.items():
            for tag in run_tags if isinstance(run_tags, dict) else ():
                name = tag if run == "." else f"{run}/{tag}"
                if not tags or name in tags:
                    counted[0] += 1
                    yield name, str(run), str(tag)

    # the first MAX_TAGS by name, without sorting (or keeping) the rest: the Job's code names its tags, and an
    # 8 MB tag list is 700,000 of them
    wanted = heapq.nsmallest(MAX_TAGS, every())
    series = {name: thin(scalar_points(_get(gateway, f"{base}/scalars?run={seg(run)}&tag="
                                                     f"{seg(tag)}", tag)))
              for name, run, tag in wanted}
    return series, (f"TensorBoard has {counted[0]:,} tags: the first {MAX_TAGS} read (name one with --tag)"
                    if counted[0] > MAX_TAGS else "")


def fetch_metrics(access: ClusterAccess, job_name: str, source: str = "auto", tags: list[str] | None = None,
                  header: Header | None = None) -> MetricsResult:
    """The Job's series from the asked source; `auto` is TensorBoard when the Header Task has a
    `tensorBoardDir` and the proxy answers, else the Header log (the note says why)."""
    header = header or find_header(access, job_name)
    note = ""
    if source in ("auto", "tensorboard"):
        if not header.tensorboard_dir:
            if source == "tensorboard":
                raise MetricsUnavailable(f"metrics: the Header Task {header.task} has no tensorBoardDir")
            note = "no tensorBoardDir on the Header Task"
        else:
            try:
                series, left_out = tensorboard_series(access, header.task, tags)
                if series or source == "tensorboard":
                    return _result(job_name, "tensorboard", series, left_out)
                note = "TensorBoard has no scalars yet"
            except MetricsUnavailable as exc:
                if source == "tensorboard":
                    raise
                note = str(exc)
    try:
        lines, left_out = read_log(access, header.cluster, header.pod, SERIES_TAIL_LINES, SERIES_TAIL_BYTES)
    except (ApiError, Unreachable) as exc:
        raise MetricsUnavailable(f"metrics: {exc}" + (f" (and {note})" if note else "")) from exc
    if left_out:
        note = "; ".join(filter(None, [note, f"the Header log: {left_out}"]))
    parsed = metric_series(lines, tags)
    if parsed.more_tags:
        note = "; ".join(filter(None, [note, f"the log names more than {MAX_TAGS} tags: the first {MAX_TAGS} read "
                                             "(name one with --tag)"]))
    if parsed.partial:
        note = "; ".join(filter(None, [note, "the log ends inside a metric table (left out)"]))
    return _result(job_name, "log", parsed.points, note)


def _result(job: str, source: str, series: dict[str, list[Point]], note: str) -> MetricsResult:
    thinned = {tag: thin(points) for tag, points in series.items()}
    changed = any(len(thinned[t]) != len(series[t]) for t in series)
    return MetricsResult(job, source, thinned, note=note, thinned=changed)


def snapshot_header(index: SnapshotIndex, job_name: str) -> Header | None:
    """The Job's Header from the reconciler's index (its Header Task's Pod CRs), without a request."""
    job = index.job(job_name)
    if job is None or job.head_task is None:
        return None
    pod = header_pod(index.pods_by_task.get(job.head_task_name, []))
    return _header(job, pod) if pod is not None else None


def poll_metrics(access: ClusterAccess, index: SnapshotIndex, job_name: str) -> MetricsState:
    """The reconciler's Metrics read of an opened Job (source auto); a failed read keeps the last result."""
    previous = index.snapshot.metrics.get(job_name)
    kept, kept_time = (previous.result, previous.step_time) if isinstance(previous, MetricsState) else (None, None)
    header = snapshot_header(index, job_name)
    if header is None:
        return MetricsState(kept, f"Job {job_name} has no Header Pod yet", kept_time)
    try:
        result = fetch_metrics(access, job_name, "auto", header=header)
    except RlarkError as exc:
        return MetricsState(kept, str(exc), kept_time)
    return MetricsState(result, step_time=breakdown(result.series))
