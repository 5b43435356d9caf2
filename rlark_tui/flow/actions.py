"""The one path every mutation takes (submit, stop, start, delete, check summaries, storage uploads and deletes, SSH
keys), from the
CLI and the TUI alike.

Owns --readonly enforcement (also for user-typed exec, cp and the TUI shell, and the methods tunnels pass),
the platform's lifecycle rules, writing the submitted-spec record
(model/submission.py) on the Job and in the local state dir, and waiting for Pods to go or come back.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import ApiError, NotFound, Unreachable
from rlark_tui.cluster.kinds import API_VERSION, JOBS, WORKFLOWS
from rlark_tui.cluster.tunnel import READ_ONLY_METHODS
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.jobspec.resume import unchanged
from rlark_tui.local.config import state_dir as default_state_dir
from rlark_tui.local.fsutil import write_private
from rlark_tui.model import keys
from rlark_tui.model.lifecycle import START_NOTE, TERMINAL_PHASES, finished_refusal
from rlark_tui.model.objects import Job, dig
from rlark_tui.model.submission import SUBMITTED_SPEC_SHA256_ANNOTATION, with_submission_record
from rlark_tui.text.redact import redact_object
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import object_file_name, shell_line


class ReadOnlyError(RlarkError):
    """A mutation was attempted in --readonly mode."""


class Refused(RlarkError):
    """The platform would ignore this action (e.g. stop/start of a finished Job)."""


@dataclass(frozen=True)
class SubmitResult:
    job: dict
    dry_run: bool
    sha256: str
    saved: Path | None


@dataclass(frozen=True)
class WaitResult:
    done: bool
    pods: int
    expected: int
    seconds: float


class Actions:
    """Mutations of one ClusterAccess; `readonly` (--readonly), or a context its kubeconfig makes read-only
    (`access.read_only_reason`), refuses all of them here, for every caller. Without one (a TUI shown only the
    Snapshots posted to it) every mutation is refused as not connected."""

    def __init__(self, access: ClusterAccess | None, readonly: bool = False, state_dir: Path | None = None) -> None:
        self._access = access
        self.readonly = readonly or bool(getattr(access, "read_only_reason", ""))
        self.state_dir = state_dir

    @property
    def access(self) -> ClusterAccess:
        """The cluster the mutations go to; RlarkError when there is none."""
        if self._access is None:
            raise RlarkError("not connected to a cluster")
        return self._access

    def guard(self, what: str) -> None:
        if self.readonly:
            why = getattr(self._access, "read_only_reason", "") or "started with --readonly"
            raise ReadOnlyError(f"read-only mode: refusing to {what} ({why})")

    def tunnel_methods(self) -> frozenset[str] | None:
        """The HTTP methods a tunnel to a Job's web ports passes: all, or in read-only mode only GET and HEAD."""
        return READ_ONLY_METHODS if self.readonly else None

    # -- submit ---------------------------------------------------------------------------------------------

    def submit(self, manifest: dict, dry_run: bool = False) -> SubmitResult:
        """Create the Job with its submission record; dry_run asks the server (dryRun=All) and writes nothing."""
        name = _job_name(manifest)
        if not dry_run:
            self.guard(f"submit job {name}")
        job = with_submission_record(manifest)
        try:
            created = self.access.create(JOBS, job, dry_run=dry_run)
        except Unreachable as exc:
            if dry_run or exc.kind not in ("dropped", "timeout"):
                raise
            raise Unreachable(f"{exc}; the request may have reached the server: check with "
                              f"`{shell_line(['rlark', 'get', 'jobs'], [name])}` before submitting again", exc.kind) from None
        sha = job["metadata"]["annotations"][SUBMITTED_SPEC_SHA256_ANNOTATION]
        saved = None if dry_run else self._save(job, sha)
        return SubmitResult(created or job, dry_run, sha, saved)

    def edit_restart(self, manifest: dict, dry_run: bool = False) -> SubmitResult:
        """The console's Edit-and-restart: a PUT of the regenerated Job with `rlark.io/restarted-at` and
        `spec.stopped: false`, the name locked. Unlike the console's PUT, the Job's other annotations and
        labels stay, and rlark's submission record is renewed for the new spec (the run check compares
        against it)."""
        name = _job_name(manifest)
        if not dry_run:
            self.guard(f"edit and restart job {name}")
        live = self._lifecycle_job(name, "edit and restart")
        job = copy.deepcopy(manifest)
        job["spec"] = {**(job.get("spec") or {}), "stopped": False}
        metadata = job.setdefault("metadata", {})
        metadata["labels"] = {**live.labels, **(metadata.get("labels") or {})}
        metadata["annotations"] = {**live.annotations, **(metadata.get("annotations") or {}),
                                   keys.RESTARTED_AT_ANNOTATION: _now_iso()}
        metadata["resourceVersion"] = str((live.raw.get("metadata") or {}).get("resourceVersion") or "")
        job = with_submission_record(job)
        updated = self.access.replace(JOBS, job, dry_run=dry_run)
        sha = job["metadata"]["annotations"][SUBMITTED_SPEC_SHA256_ANNOTATION]
        return SubmitResult(updated or job, dry_run, sha, None if dry_run else self._save(job, sha))

    def resume(self, manifest: dict, timeout: float = 300.0, stop: threading.Event | None = None) -> SubmitResult:
        """A resume (`rlark resume`, the Checkpoints tab's `u`): the Edit & Restart of a live Job; a finished one
        (Succeeded or Failed) is terminal for the platform's Job controller, which skips it (a PUT changes
        nothing), so it is the platform's delete and re-create (`recreate`). A running Job whose run command
        already resumes from there would keep its Pods through the PUT (no template changes), so it is stopped
        first: once its Pods are gone, the Edit & Restart starts it again."""
        name = _job_name(manifest)
        self.guard(f"resume job {name}")
        live = Job(self.access.get(JOBS, name))
        if live.phase in TERMINAL_PHASES:
            return self.recreate(manifest, live, timeout, stop)
        if not live.stopped and unchanged(live.raw, manifest):
            self.access.patch(JOBS, name, {"spec": {"stopped": True}})
            gone = self.wait_stopped(name, timeout, stop)
            if not gone.done:
                raise RlarkError(f"job {name} was stopped to start it again from the same checkpoint, but {gone.pods} "
                                 f"Pod(s) are still there after {gone.seconds:.0f}s: `{shell_line(['rlark', 'start'], [name])}` once they "
                                 "are gone")
        return self.edit_restart(manifest)

    def recreate(self, manifest: dict, live: Job, timeout: float = 300.0,
                 stop: threading.Event | None = None) -> SubmitResult:
        """Delete the finished Job `live`, wait until it, its Tasks and their Pods are gone (a Task left behind
        would be taken over by the new Job's controller half-deleted), then create `manifest` under the same name
        with the live Job's labels and annotations, `rlark.io/restarted-at` and `spec.stopped: false`, and a new
        submission record. The spec is kept under the state dir (secrets masked) before the delete, and named if
        the wait runs out."""
        name = _job_name(manifest)
        self.guard(f"resume job {name}")
        job = copy.deepcopy(manifest)
        job["spec"] = {**(job.get("spec") or {}), "stopped": False}
        given = manifest.get("metadata") or {}
        job["metadata"] = {"name": name, "labels": {**live.labels, **(given.get("labels") or {})},
                           "annotations": {**live.annotations, **(given.get("annotations") or {}),
                                           keys.RESTARTED_AT_ANNOTATION: _now_iso()}}
        job = with_submission_record(job)
        sha = job["metadata"]["annotations"][SUBMITTED_SPEC_SHA256_ANNOTATION]
        saved = self._save(job, sha)
        tasks = self.access.job_tasks(name)
        try:
            self.access.delete(JOBS, name)
        except NotFound:
            pass
        gone = self._wait_gone(name, tasks, timeout, stop)
        if not gone.done:
            kept = f"; its spec is kept at {saved} (secret values masked)" if saved else ""
            raise RlarkError(f"job {name} was deleted but it, its Tasks or their Pods are still there after "
                             f"{gone.seconds:.0f}s, so it was not created again{kept}: submit that spec with "
                             "`rlark submit` once they are gone")
        created = self.access.create(JOBS, job)
        return SubmitResult(created or job, False, sha, saved)

    def _wait_gone(self, name: str, tasks: list, timeout: float, stop: threading.Event | None) -> WaitResult:
        """Until the Job, the Tasks it had and their Pod CRs are all gone; `pods` counts what is left of them."""
        stop = stop or threading.Event()
        began = time.monotonic()
        while True:
            try:
                self.access.get(JOBS, name)
                left = -1
            except NotFound:
                try:
                    left = len(self.access.job_tasks(name)) + len(self.access.job_pods(name, tasks))
                except (ApiError, Unreachable):
                    left = -1
            except (ApiError, Unreachable):
                left = -1
            if left == 0:
                return WaitResult(True, 0, 0, time.monotonic() - began)
            if time.monotonic() - began >= timeout or stop.wait(0.5):
                return WaitResult(False, max(left, 0), 0, time.monotonic() - began)

    def submit_workflow(self, manifest: dict, dry_run: bool = False) -> dict:
        """Create a Workflow (its controller creates the Jobs); dry_run asks the server and writes nothing."""
        name = _manifest_name(manifest, "Workflow")
        if not dry_run:
            self.guard(f"submit workflow {name}")
        return self.access.create(WORKFLOWS, manifest, dry_run=dry_run) or manifest

    def delete_workflow(self, name: str) -> str:
        """Delete a Workflow; the Jobs it created go with it (their owner reference, jobspec/workflow.py)."""
        from rlark_tui.jobspec.workflow import WORKFLOW_LABEL

        self.guard(f"delete workflow {name}")
        self.access.get(WORKFLOWS, name)
        jobs = self.access.list(JOBS, label_selector=f"{WORKFLOW_LABEL}={name}").items
        self.access.delete(WORKFLOWS, name)
        return (f"workflow {name} deleted" + (f"; its {len(jobs)} Job(s) go with it" if jobs else ""))

    def _save(self, job: dict, sha: str) -> Path | None:
        """Keep the submitted YAML (secrets masked) under the state dir; a failure here never fails the submit."""
        root = (self.state_dir or default_state_dir()) / "submitted"
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        path = root / f"{object_file_name(str(dig(job, 'metadata', 'name', default='')))}-{stamp}-{sha[:12]}.yaml"
        text = ("# Submitted by rlark; secret-looking values are masked here (the Job holds the real ones).\n"
                f"# spec sha256: {sha}\n" + yaml.safe_dump(redact_object(job), sort_keys=False))
        try:
            write_private(path, text)
        except (OSError, RlarkError):
            return None
        return path

    # -- lifecycle ------------------------------------------------------------------------------------------

    def preflight(self, verb: str, name: str) -> None:
        """Refuse early (before any confirmation): read-only mode, a missing Job, a finished Job for stop/start."""
        self.guard(f"{verb} job {name}")
        if verb in ("stop", "start", "restart", "edit and restart"):
            self._lifecycle_job(name, verb)
        else:
            self.access.get(JOBS, name)

    def _lifecycle_job(self, name: str, verb: str) -> Job:
        job = Job(self.access.get(JOBS, name))
        why_not = finished_refusal(name, job.phase, verb)
        if why_not:
            raise Refused(why_not)
        return job

    def stop(self, name: str) -> str:
        """`spec.stopped: true` (Task replicas to 0, Pods deleted); returns what happened."""
        self.guard(f"stop job {name}")
        job = self._lifecycle_job(name, "stop")
        if job.stopped:
            return f"job {name} is already stopped"
        self.access.patch(JOBS, name, {"spec": {"stopped": True}})
        return f"job {name} stopped: its Pods are being deleted (Tasks, PVCs and the head Service stay)"

    def start(self, name: str) -> str:
        """`spec.stopped: false` (replicas restored, new Pods)."""
        self.guard(f"start job {name}")
        job = self._lifecycle_job(name, "start")
        if not job.stopped:
            return f"job {name} is not stopped; nothing to start"
        self.access.patch(JOBS, name, {"spec": {"stopped": False}})
        return f"job {name} started. {START_NOTE}"

    def restart(self, name: str) -> str:
        """What the console's Restart does: annotation `rlark.io/restarted-at` and `spec.stopped: false`, one
        merge patch. It only un-stops: on a Job that is not stopped no controller reads it."""
        self.guard(f"restart job {name}")
        job = self._lifecycle_job(name, "restart")
        self.access.patch(JOBS, name, {"metadata": {"annotations": {keys.RESTARTED_AT_ANNOTATION: _now_iso()}},
                                       "spec": {"stopped": False}})
        if job.stopped:
            return f"job {name} restarted: new Pods are being created. {START_NOTE}"
        return (f"job {name} was not stopped: the restart time is recorded, but no controller reads it on a "
                "running Job, so nothing restarts")

    def annotate_check(self, name: str, summary) -> str:
        """Write a saved run check's summary (model/check_summary.py) to the Job: a merge patch of one annotation,
        metadata only; the Job controller builds Tasks from the spec alone, so nothing restarts or re-syncs."""
        from rlark_tui.model.check_summary import annotation_patch

        self.guard(f"write the check summary to job {name}")
        self.access.patch(JOBS, name, annotation_patch(summary))
        return f"check summary written to job {name} (annotation {keys.CHECK_SUMMARY_ANNOTATION})"

    def delete(self, name: str) -> str:
        self.guard(f"delete job {name}")
        self.access.delete(JOBS, name)
        return f"job {name} deleted (its Tasks, workloads, head Service and task PVCs go with it)"

    # -- storage objects and SSH keys (the gateway) -----------------------------------------------------------

    def upload_object(self, storage_class: str, cluster: str, key: str, data: bytes) -> str:
        """The console's Storage upload: `POST .../upload` with the key as the file name."""
        self.guard(f"upload {storage_class}:{key}")
        answer = self.access.storage_upload(storage_class, cluster, key, data)
        returned = answer.get("key") if isinstance(answer, dict) else None
        stored = returned if isinstance(returned, str) else key
        return f"uploaded {len(data)} bytes to {storage_class}:{clean(stored)} on {cluster}"

    def delete_object(self, storage_class: str, cluster: str, key: str) -> str:
        self.guard(f"delete {storage_class}:{key}")
        self.access.storage_delete(storage_class, cluster, key)
        return f"deleted {storage_class}:{key} on {cluster}"

    def add_ssh_key(self, user: str, public_key: str) -> str:
        """Register one OpenSSH public key for `user` (the console's SSH keys page, `POST /api/v1/ssh-user-keys`)."""
        self.guard(f"add an SSH key for {user}")
        self.access.add_ssh_key(user, public_key)
        return f"SSH key added for {user}"

    def delete_ssh_key(self, user: str, index: int) -> str:
        self.guard(f"delete SSH key {index} of {user}")
        self.access.delete_ssh_key(index, user)
        return f"SSH key {index} of {user} deleted"

    # -- waiting --------------------------------------------------------------------------------------------

    def wait_stopped(self, name: str, timeout: float, stop: threading.Event | None = None) -> WaitResult:
        """Until the Job has no Pods left."""
        return self._wait(name, timeout, stop, lambda pods, expected: pods == 0)

    def wait_started(self, name: str, timeout: float, stop: threading.Event | None = None) -> WaitResult:
        """Until the Job has a Pod for every replica again."""
        return self._wait(name, timeout, stop, lambda pods, expected: expected > 0 and pods >= expected)

    def wait_deleted(self, name: str, timeout: float, stop: threading.Event | None = None) -> WaitResult:
        """Until the Job is gone."""
        stop = stop or threading.Event()
        began = time.monotonic()
        while True:
            try:
                self.access.get(JOBS, name)
            except NotFound:
                return WaitResult(True, 0, 0, time.monotonic() - began)
            except (ApiError, Unreachable):
                pass
            if time.monotonic() - began >= timeout or stop.wait(1.0):
                return WaitResult(False, 0, 0, time.monotonic() - began)

    def _wait(self, name, timeout, stop, done) -> WaitResult:
        stop = stop or threading.Event()
        began = time.monotonic()
        pods = expected = 0
        while True:
            try:
                job = Job(self.access.get(JOBS, name))
                expected = job.total_nodes
                pods = len(self.access.job_pods(name))
                if done(pods, expected):
                    return WaitResult(True, pods, expected, time.monotonic() - began)
            except NotFound:
                raise
            except (ApiError, Unreachable):
                pass
            if time.monotonic() - began >= timeout or stop.wait(1.0):
                return WaitResult(False, pods, expected, time.monotonic() - began)


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _job_name(manifest: dict) -> str:
    return _manifest_name(manifest, "Job")


def _manifest_name(manifest: dict, kind: str) -> str:
    if not isinstance(manifest, dict):
        raise UsageError("the manifest must be a mapping")
    if manifest.get("apiVersion") != API_VERSION or manifest.get("kind") != kind:
        raise UsageError(f"not a {kind} manifest: expected apiVersion {API_VERSION} and kind {kind}")
    name = (manifest.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise UsageError(f"the {kind} manifest needs metadata.name")
    return name
