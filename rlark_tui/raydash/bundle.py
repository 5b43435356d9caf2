"""Read everything a post-mortem needs of one Job and write it, masked, as one .tar.gz (issue 34 item 5; the layout,
the log budget and the manifest are telemetry/bundle.py's).

Read: the Job, its Tasks and Pod CRs as `rlark get -o yaml` shows them; each member Pod and its events; every
container's log, current and previous (each whole up to the budget); through raydash/diagnose.py's gather Ray's
actors, workers, nodes and each dead worker's stderr, and the diagnosis (joined with the evidence kept in the state
dir, and the first failure's stderr excerpt kept there when Ray no longer serves that worker's stderr); the metric series; the Job's newest run-check record. What cannot be read is a note in the manifest.

No secret in any member: every member's text is masked with the Job's secret values, the values of the Secrets its
spec and Pods reference (cluster/secrets.py, as `rlark logs` reads them) and the Ray token, on top of what redact
masks by its look. Logs are streamed through a spool file per container (0600, in a private directory, gone
afterwards), so memory holds at most half a container's budget; the archive is written through
local/fsutil.atomic_output (0600, O_EXCL, renamed into place when complete).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import yaml

from rlark_tui.cluster.errors import ApiError, NotFound, Unreachable
from rlark_tui.cluster.kinds import JOBS, PODS, TASKS
from rlark_tui.cluster.output import render_objects
from rlark_tui.errors import RlarkError
from rlark_tui.model import keys
from rlark_tui.model.objects import Job, Pod, dig, restart_count
from rlark_tui.raydash import diagnose as diagnose_reads
from rlark_tui.telemetry import bundle as layout
from rlark_tui.telemetry import diagnosis as pure
from rlark_tui.text.redact import KnownSecrets, LineRedactor, redact_object, secret_values
from rlark_tui.text.sinks import utf8

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess

BATCH_LINES = 2000
"""Log lines masked at once (LineRedactor.lines)."""
RECORD_BYTES = 4 * 1024 * 1024


class Masker:
    """The masking of every member: redact's look-based masks, then the Job's known secret values."""

    def __init__(self, known: frozenset[str]) -> None:
        self.known = known
        self._exact = KnownSecrets(known)

    def text(self, text: str) -> str:
        return self._exact.mask(text) if self._exact else text

    def tree(self, value: Any) -> Any:
        """A JSON-like value with every string redacted (redact_object) and then the known values masked."""
        return self._known(redact_object(value))

    def _known(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._known(item) for item in value]
        if isinstance(value, dict):
            return {key: self._known(item) for key, item in value.items()}
        return value

    def lines(self) -> LineRedactor:
        return LineRedactor(self.known)


class Writer:
    """The archive being written: each member added at once, its size and sha256 kept for the manifest."""

    def __init__(self, tar: tarfile.TarFile, manifest: layout.Manifest, mtime: float) -> None:
        self.tar, self.manifest, self.mtime = tar, manifest, mtime
        self._written: set[str] = set()

    def _info(self, path: str, size: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(path)
        info.size, info.mode, info.mtime = size, 0o600, int(self.mtime)
        return info

    def _taken(self, path: str) -> bool:
        """Whether a member of this name is already written: a Pod's members are named by its cluster, namespace
        and exact name (layout.pod_folder), so only two Pod CRs naming one Pod (the data plane's text) name one
        member, and a tar holding two of a name gives the last to a reader. The first stays, and a note says the
        second is left out."""
        if path in self._written:
            self.manifest.notes.append(f"{path}: a second member of this name is left out (two Pod CRs name one "
                                       "Pod)")
            return True
        self._written.add(path)
        return False

    def add(self, path: str, data: str | bytes, kept: str = "", of: tuple[tuple[str, str], ...] = ()) -> None:
        if self._taken(path):
            return
        payload = utf8(data) if isinstance(data, str) else data
        self.tar.addfile(self._info(path, len(payload)), io.BytesIO(payload))
        self.manifest.members.append(layout.Member(path, len(payload), hashlib.sha256(payload).hexdigest(),
                                                   kept=kept, of=of))

    def add_spool(self, path: str, spool: IO[bytes], size: int, digest: str, read: int, left_out: int,
                  of: tuple[tuple[str, str], ...] = ()) -> None:
        if self._taken(path):
            return
        spool.seek(0)
        self.tar.addfile(self._info(path, size), spool)
        self.manifest.members.append(layout.Member(path, size, digest, read, left_out, of=of))

    def json(self, path: str, value: Any) -> None:
        self.add(path, json.dumps(value, ensure_ascii=False, indent=1, default=str) + "\n")

    def yaml(self, path: str, value: Any, of: tuple[tuple[str, str], ...] = ()) -> None:
        self.add(path, yaml.safe_dump(value, sort_keys=False, allow_unicode=True), of=of)


def default_path(job: str, at: float) -> str:
    from rlark_tui.text.sinks import object_file_name
    return f"{object_file_name(job)}-bundle-{datetime.fromtimestamp(at, UTC).strftime('%Y%m%dT%H%M%SZ')}.tar.gz"


def write_bundle(access: ClusterAccess, name: str, path: str | Path, state_dir: Path,
                 budget: int = layout.LOG_BUDGET, now: float | None = None,
                 total: int = layout.TOTAL_BUDGET) -> layout.Manifest:
    """Read Job `name` and write its bundle to `path` (replaced whole, or left as it was on an error): each
    container log whole up to `budget` bytes, or its equal part of `total` when that is smaller."""
    from rlark_tui.local.fsutil import atomic_output

    at = time.time() if now is None else now
    try:
        raw = access.get(JOBS, name)
    except NotFound:
        raise RlarkError(f"bundle: Job {name} does not exist") from None
    job = Job(raw)
    manifest = layout.Manifest(name, datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z"), budget,
                               total=total)
    notes = manifest.notes
    tasks = _read(notes, "Tasks", lambda: access.job_tasks(name))
    pod_crs = _read(notes, "Pods", lambda: access.job_pods(name, tasks))
    crs = [Pod(item) for item in pod_crs]
    inputs = diagnose_reads.gather(access, job, notes)
    by_name = {str((pod.get("metadata") or {}).get("name") or ""): pod for pod in inputs.pods}
    manifest.logs = sum(1 for cr in crs if cr.pod_name in by_name for _ in _containers(by_name[cr.pod_name]))
    manifest.budget = budget = layout.log_budget(budget, total, manifest.logs)
    masker = Masker(frozenset(inputs.known) | secret_values([raw, tasks]))  # what the Tasks name secret too
    kept = diagnose_reads.remember(state_dir, job.uid,
                                   diagnose_reads.read_kept(state_dir, name, job.uid, context=access.context,
                                                            notes=notes),
                                   pure.diagnose(inputs), notes, context=access.context)
    diagnosis = kept.diagnosis
    with atomic_output(path) as out, tarfile.open(fileobj=out, mode="w|gz") as tar:
        writer = Writer(tar, manifest, at)
        writer.add(layout.JOB, masker.text(render_objects(JOBS, [raw], "yaml", single=True)) + "\n")
        writer.add(layout.TASKS, masker.text(render_objects(TASKS, tasks, "yaml")) + "\n")
        writer.add(layout.POD_CRS, masker.text(render_objects(PODS, pod_crs, "yaml")) + "\n")
        with _spool_dir() as spools:
            for cr in crs:
                pod = by_name.get(cr.pod_name)
                if pod is None:
                    continue
                namespace = cr.pod_namespace or keys.WORKLOAD_NAMESPACE
                of = _of(cr)
                writer.yaml(layout.pod_member(cr.cluster, namespace, cr.pod_name), masker.tree(pod), of)
                events = _read(notes, f"events of {cr.pod_name}", partial(
                    access.data_plane_events, cr.cluster, cr.pod_name, namespace))
                writer.yaml(layout.events_member(cr.cluster, namespace, cr.pod_name), masker.tree(events), of)
                for container, previous in _containers(pod):
                    _log(access, writer, masker, cr, container, previous, budget, spools)
        writer.json(layout.ACTORS, masker.tree(inputs.actors))
        writer.json(layout.WORKERS, masker.tree(inputs.workers))
        writer.json(layout.NODES, masker.tree(inputs.node_ips))
        redactor = masker.lines()
        for pid, text in sorted(inputs.stderr.items()):
            writer.add(layout.stderr_member(pid), "".join(line + "\n" for line in
                                                          redactor.source_backlog(text.splitlines(), str(pid))))
        if kept.stderr is not None and kept.stderr.pid not in inputs.stderr:
            _kept_stderr(writer, redactor, kept.stderr)
        writer.json(layout.DIAGNOSIS, masker.tree(pure.to_json(diagnosis)))
        metrics = _metrics(access, name, notes)
        if metrics is not None:
            writer.json(layout.METRICS, masker.tree(metrics))
        record = _last_check(state_dir, name, job.uid)
        if record is not None:
            writer.json(layout.CHECK, masker.tree(record))
        writer.json(layout.MANIFEST, manifest.to_json())
    return manifest


def _of(cr: Pod, container: str = "") -> tuple[tuple[str, str], ...]:
    """Which Pod (and container) a member is of, for the manifest: the names as the cluster gave them."""
    of = (("cluster", cr.cluster), ("namespace", cr.pod_namespace or keys.WORKLOAD_NAMESPACE), ("pod", cr.pod_name))
    return (*of, ("container", container)) if container else of


def _kept_stderr(writer: Writer, redactor: LineRedactor, kept: diagnose_reads.KeptStderr) -> None:
    """The first failure's stderr excerpt rlark kept, as that worker's stderr member, once Ray no longer serves it
    (Ray drops a dead worker's stderr when the Header container exits); the manifest says it is rlark's copy."""
    member = layout.stderr_member(kept.pid)
    at = pure.iso(kept.kept_at) or ""
    writer.add(member, "".join(line + "\n" for line in redactor.source_backlog(list(kept.lines), str(kept.pid))),
               kept=at)
    writer.manifest.notes.append(f"{member}: Ray no longer serves the stderr of worker {kept.pid} ({kept.worker}); "
                                 f"this is the excerpt of it rlark kept at {at}, when the failure was first seen")


def _read(notes: list[str], what: str, read: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    try:
        return read()
    except (ApiError, Unreachable) as exc:
        notes.append(f"{what}: {exc}")
        return []


def _containers(pod: Mapping[str, Any]) -> Iterator[tuple[str, bool]]:
    """Each container's current log, and its previous one when it restarted. The Pod is cluster text: a list
    that is not one is empty, a restartCount that is not a number (`²`, a list) is no restart."""
    def items(*path: str) -> list[Any]:
        value = dig(pod, *path)
        return value if isinstance(value, list) else []

    restarted = {str(s.get("name")): restart_count(s) or 0 for s in
                 [*items("status", "containerStatuses"), *items("status", "initContainerStatuses")]
                 if isinstance(s, dict)}
    for item in [*items("spec", "initContainers"), *items("spec", "containers")]:
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name:
            if restarted.get(name):
                yield name, True
            yield name, False


def _log(access: ClusterAccess, writer: Writer, masker: Masker, cr: Pod, container: str, previous: bool,
         budget: int, spools: str) -> None:
    """One container's log, masked, into the archive: the lines a LogBudget keeps, through a spool file."""
    what = f"the log of {cr.pod_name}/{container}{' (previous)' if previous else ''}"
    try:
        stream = access.pod_log(cr.cluster, cr.pod_name, namespace=cr.pod_namespace or keys.WORKLOAD_NAMESPACE,
                                container=container, previous=previous, timestamps=True, read_timeout=60)
    except (ApiError, Unreachable) as exc:
        writer.manifest.notes.append(f"{what}: {exc}")
        return
    kept = layout.LogBudget(budget)
    digest = hashlib.sha256()
    redactor = masker.lines()
    source = f"{cr.pod_name}/{container}"
    with tempfile.TemporaryFile(dir=spools) as spool:
        size = 0

        def put(data: bytes) -> None:
            nonlocal size
            spool.write(data)
            digest.update(data)
            size += len(data)

        def flush(batch: list[str]) -> None:
            for text in redactor.lines(batch, source):
                data = (text + "\n").encode("utf-8", "replace")
                if kept.take(data):
                    put(data)

        batch: list[str] = []
        try:
            for line in stream:
                batch.append(line)
                if len(batch) >= BATCH_LINES:
                    flush(batch)
                    batch = []
        except (ApiError, Unreachable) as exc:
            writer.manifest.notes.append(f"{what}: cut short: {exc}")
        flush(batch)
        if kept.left_out:
            put(layout.left_out_line(kept.left_out, budget))
        while kept.tail:
            put(kept.tail.popleft())
        member = layout.log_member(cr.cluster, cr.pod_namespace or keys.WORKLOAD_NAMESPACE, cr.pod_name, container,
                                   previous)
        writer.add_spool(member, spool, size, digest.hexdigest(), kept.read, kept.left_out, _of(cr, container))


@contextlib.contextmanager
def _spool_dir() -> Iterator[str]:
    from rlark_tui.local.fsutil import private_spool_dir

    folder = private_spool_dir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _metrics(access: ClusterAccess, name: str, notes: list[str]) -> dict[str, Any] | None:
    from rlark_tui.cluster.metrics import fetch_metrics

    try:
        return fetch_metrics(access, name).to_json()
    except (RlarkError, ApiError, Unreachable) as exc:
        notes.append(f"metrics: {exc}")
        return None


def _last_check(state_dir: Path, name: str, uid: str) -> dict[str, Any] | None:
    """The Job's newest run-check record (`rlark check` and the TUI save them under the state dir): one of the Job
    with `uid`, never of another Job of the same name (made again since, or another context's)."""
    from rlark_tui.checks.records import list_records
    from rlark_tui.local.fsutil import read_own
    from rlark_tui.text.parse import load_json

    for record in list_records(Path(state_dir)):
        if record.job == name and uid:
            try:
                data = load_json(read_own(Path(record.path).with_suffix(".json"), RECORD_BYTES))
            except (OSError, ValueError, RlarkError):
                continue
            if isinstance(data, dict) and data.get("uid") == uid:
                return data
    return None
