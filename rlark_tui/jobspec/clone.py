"""A Job back as a JobDraft, for Clone and Edit: from the deployment plan and launch record rlark stores with
the Job (W14) plus its spec, saying what could not be recovered. Pure.

A clone gets a free `<name>-copy` name and a new run: a new `runId` and an output prefix of its own, so it can
never overwrite the original's checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any

from rlark_tui.jobspec.draft import JobDraft, Mount, RoleDraft
from rlark_tui.jobspec.validate import DRAFT_TYPE_TO_JOB_TYPE
from rlark_tui.model import keys
from rlark_tui.model.naming import DNS_LABEL_MAX
from rlark_tui.model.objects import Job, TaskSpec
from rlark_tui.text.sinks import one_line

ROLE_ENV = "RLARK_TASK_ROLE"
DRAFT_TYPE = MappingProxyType({job_type: draft_type for draft_type, job_type in DRAFT_TYPE_TO_JOB_TYPE.items()})
"""The console's Job type (derived from the roles) -> the draft's `type`."""


@dataclass(frozen=True)
class Recovered:
    """The draft, and one plain sentence per thing the Job did not say (empty for a Job rlark submitted)."""

    draft: JobDraft
    notes: tuple[str, ...]

    def __post_init__(self) -> None:
        # a note quotes the Job's text (an env name, a mount, the record's output prefix): each stays one line
        # wherever it is printed (`rlark clone`'s 'note: …' lines, the TUI's toast)
        object.__setattr__(self, "notes", tuple(one_line(note) for note in self.notes))


def _planned(job: Job) -> dict[str, Mapping]:
    roles = job.deployment_plan.get("roles")
    return {str(r.get("task")): r for r in roles if isinstance(r, Mapping)} if isinstance(roles, list) else {}


def _count(value: float) -> int:
    return int(value) if float(value).is_integer() else int(value) + 1


def _role(task: TaskSpec, plan: Mapping, notes: list[str], debuggable: bool) -> RoleDraft:
    where = f"role {task.name}"
    name = str(plan.get("name") or task.role_display_name)
    cluster = str(plan.get("cluster") or "")
    if not cluster:
        notes.append(f"{where}: its cluster was not recorded; pick it again")
    planned = plan.get("selector")
    selector: Mapping = planned if isinstance(planned, Mapping) else task.node_selector
    placement = plan.get("placement")
    hardware, workers = "", 0
    nodes: tuple[str, ...] = ()
    if isinstance(placement, Mapping):
        hardware = str(placement.get("hardware") or "")
        picked = placement.get("nodes")
        nodes = tuple(str(n) for n in picked if isinstance(n, str) and n) if isinstance(picked, list) else ()
        count = placement.get("workers")
        workers = 0 if nodes or isinstance(count, bool) or not isinstance(count, int) else max(count, 0)
        selector = {}
    elif set(selector) == {keys.HOSTNAME_LABEL} and "," in str(selector[keys.HOSTNAME_LABEL]):
        hosts = tuple(dict.fromkeys(h.strip() for h in str(selector[keys.HOSTNAME_LABEL]).split(",") if h.strip()))
        if len(hosts) == task.replicas:  # the console's picked Nodes: one worker each
            nodes, selector = hosts, {}
    if any("," in str(v) for v in selector.values()):
        notes.append(f"{where}: the selector has several values for one key; the wizard takes one value per key "
                     f"(or pick its hardware again)")
    env: dict[str, str] = {}
    for entry in task.env:
        if entry.get("name") == ROLE_ENV or (debuggable and task.head and entry.get("name") == keys.PROFILING_ENV):
            continue
        if isinstance(entry.get("value"), str):
            env[str(entry.get("name"))] = entry["value"]
        elif "value" not in entry and entry.get("name"):
            notes.append(f"{where}: env {entry['name']} comes from a reference (valueFrom); set it again")
    classes = task.pvc_storage_map
    mounts = []
    for mount in task.mounts:
        if mount["type"] == "host":
            mounts.append(Mount("host", mount["target"], source=mount["source"]))
        elif mount["type"] == "storage":
            mounts.append(Mount("storage", mount["target"], storage_class=classes.get(mount["source"], "")))
        else:
            notes.append(f"{where}: mount {mount['target']} is neither a host directory nor object storage; "
                         "left out")
    requests = task.requests
    return RoleDraft(
        name=name, role=task.role, cluster=cluster, selector=dict(selector), gpu=_count(task.gpu),
        devices={k: _count(v) for k, v in task.devices.items()}, cpu=str(requests.get("cpu") or ""),
        memory=str(requests.get("memory") or ""), image=task.image, prepare_script=task.prepare_script,
        env=env, mounts=tuple(mounts), hardware=hardware, workers=workers, nodes=nodes)


def draft_of(raw: Mapping) -> Recovered:
    """The draft that renders this Job again (same name and record)."""
    job = Job(raw)
    notes: list[str] = []
    planned = _planned(job)
    if not planned:
        notes.append("this Job has no deployment plan from rlark: clusters are not known and the roles were "
                     "rebuilt from its spec")
    record = job.launch_record
    if not record:
        notes.append("this Job has no launch record from rlark: fill in the run check's record again")
    head = job.head_task
    debuggable = bool(job.tasks) and all(task.ptrace for task in job.tasks)
    roles = tuple(_role(task, planned.get(task.name, {}), notes, debuggable) for task in job.tasks)
    header = next((r.name for r, t in zip(roles, job.tasks) if t.head), "")
    draft = JobDraft(
        name=job.name, display_name=job.display_name, type=DRAFT_TYPE.get(job.job_type, ""), header=header,
        roles=roles, domain=job.domain,
        ssh_public_key=job.ssh_public_key, run_script=head.run_script if head else "",
        tensorboard_dir=head.tensorboard_dir if head else "", debuggable=debuggable, record=dict(record))
    return Recovered(draft, tuple(notes))


def free_name(name: str, taken: Iterable[str]) -> str:
    """`<name>-copy`, else `<name>-copy-2`, `-3`, ... : the first not taken, cut to 63 characters."""
    taken = set(taken)
    suffix, n = "-copy", 2
    while True:
        candidate = name[:DNS_LABEL_MAX - len(suffix)].rstrip("-") + suffix
        if candidate not in taken:
            return candidate
        suffix, n = f"-copy-{n}", n + 1


def new_run(record: Mapping[str, Any], name: str, now: datetime) -> dict[str, Any]:
    """The record of a new run: a new `runId` (`<name>-<UTC time>`); an `outputPath` naming the old run id
    takes the new one, any other gets the new run id as its last part."""
    result = dict(record)
    run_id = f"{name}-{now.strftime('%Y%m%dT%H%M%SZ')}"
    old = str(record.get("runId") or "")
    result["runId"] = run_id
    output = str(record.get("outputPath") or "")
    if output:
        result["outputPath"] = output.replace(old, run_id) if old and old in output \
            else f"{output.rstrip('/')}/{run_id}"
    return result


def clone_of(raw: Mapping, taken: Iterable[str], now: datetime, name: str | None = None) -> Recovered:
    """The draft for a copy of this Job: `name` (default the first free `<name>-copy`) and a new run."""
    recovered = draft_of(raw)
    draft = recovered.draft
    new_name = name or free_name(draft.name, taken)
    notes = list(recovered.notes)
    record = new_run(draft.record, new_name, now) if draft.record else {}
    if draft.record.get("outputPath") and record.get("outputPath") != draft.record.get("outputPath"):
        notes.append(f"output prefix {draft.record['outputPath']} -> {record['outputPath']} (a new run)")
    return Recovered(replace(draft, name=new_name, record=record), tuple(notes))
