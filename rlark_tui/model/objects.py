"""Typed read-only views over the API dicts of Jobs, Tasks, Pods and Nodes (group rlinf.io).

A view never raises on missing, partial or wrongly typed fields: it answers with an empty value instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from rlark_tui.model import keys
from rlark_tui.model.quantity import parse_quantity
from rlark_tui.text.parse import ascii_int, load_json

_MAPPING = (dict, Mapping)
"""isinstance(x, _MAPPING): a plain dict is answered without the (much slower) ABC check."""


def dig(obj: Any, *path: str | int, default: Any = None) -> Any:
    """The value at `path` inside nested dicts/lists, or `default` when any step is missing."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or not -len(obj) <= step < len(obj):
                return default
            obj = obj[step]
        elif isinstance(obj, _MAPPING):
            if step not in obj:
                return default
            obj = obj[step]
        else:
            return default
    return default if obj is None else obj




def cluster_of(raw: Any) -> str:
    """Cluster namespace of a Node dict: `metadata.namespace`, else its `rlark.io/cluster-id` label, else ""."""
    metadata = raw.get("metadata") if isinstance(raw, dict) else dig(raw, "metadata")
    if not isinstance(metadata, _MAPPING):
        return ""
    namespace = metadata.get("namespace")
    if isinstance(namespace, str) and namespace:
        return namespace
    labels = metadata.get("labels")
    label = labels.get(keys.CLUSTER_ID_LABEL) if isinstance(labels, _MAPPING) else None
    return label if isinstance(label, str) else ""


_NONE: Mapping[str, Any] = MappingProxyType({})


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, _MAPPING) else {}


MAX_EVENTS = 500
"""The most events of a Task or a Node read from its status, in its order: 100,000 small events fit an object's
1.5 MB, and each refresh of the Job detail's Events tab laid all of them out on the UI thread (1.6 s to build a
10 MB text per refresh, before Textual drew it). `event_count` says how many there are."""


def _events(raw: Any) -> list[dict[str, Any]]:
    return [dict(e) for e in _list(dig(raw, "status", "events"))[:MAX_EVENTS] if isinstance(e, _MAPPING)]


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): v for k, v in _dict(value).items() if isinstance(v, str)}


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        number = ascii_int(text.removeprefix("-"))  # `²` and 5,000 digits are no number (int() raises)
        return None if number is None else -number if text.startswith("-") else number
    return None


def main_container_status(pod: Any) -> dict[str, Any]:
    """The `main` container's entry of a data-plane pod's `status.containerStatuses`, or {}."""
    for status in _list(dig(pod, "status", "containerStatuses")):
        if isinstance(status, _MAPPING) and status.get("name") == keys.MAIN_CONTAINER:
            return dict(status)
    return {}


def restart_count(container_status: Any) -> int | None:
    """`restartCount` of a container status as a number; None when absent or not a number."""
    value = container_status.get("restartCount") if isinstance(container_status, _MAPPING) else None
    return _int_or_none(value) if not isinstance(value, str) else None


class _View:
    """Common metadata accessors; `raw` is the API dict as received (never modified)."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any) -> None:
        self.raw = raw if isinstance(raw, _MAPPING) else {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.namespace + '/' if self.namespace else ''}{self.name})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.raw == self.raw

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.namespace, self.name))

    @property
    def name(self) -> str:
        return _str(dig(self.raw, "metadata", "name"))

    @property
    def namespace(self) -> str:
        return _str(dig(self.raw, "metadata", "namespace"))

    @property
    def uid(self) -> str:
        return _str(dig(self.raw, "metadata", "uid"))

    @property
    def labels(self) -> dict[str, str]:
        return _str_map(dig(self.raw, "metadata", "labels"))

    @property
    def annotations(self) -> dict[str, str]:
        return _str_map(dig(self.raw, "metadata", "annotations"))

    @property
    def creation_timestamp(self) -> str:
        return _str(dig(self.raw, "metadata", "creationTimestamp"))

    @property
    def resource_version(self) -> str:
        return _str(dig(self.raw, "metadata", "resourceVersion"))

    @property
    def phase(self) -> str:
        return _str(dig(self.raw, "status", "phase"))

    @property
    def message(self) -> str:
        return _str(dig(self.raw, "status", "message"))


class TaskSpec:
    """One entry of `Job.spec.tasks` or the `spec` of a Task: a role's workload."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any) -> None:
        self.raw = raw if isinstance(raw, _MAPPING) else {}

    def __repr__(self) -> str:
        return f"TaskSpec({self.name})"

    @property
    def name(self) -> str:
        return _str(self.raw.get("name"))

    @property
    def head(self) -> bool:
        return self.raw.get("head") is True

    @property
    def role(self) -> str:
        return _str(self.raw.get("role"))

    @property
    def agent_type(self) -> str:
        return _str(self.raw.get("agentType"))

    @property
    def node_selector(self) -> dict[str, str]:
        return _str_map(self.raw.get("nodeSelector"))

    @property
    def prepare_script(self) -> str:
        return _str(self.raw.get("prepareScript"))

    @property
    def run_script(self) -> str:
        return _str(self.raw.get("runScript"))

    @property
    def tensorboard_dir(self) -> str:
        return _str(self.raw.get("tensorBoardDir"))

    @property
    def domain(self) -> str:
        return _str(self.raw.get("domain"))

    @property
    def workload(self) -> dict[str, Any]:
        return _dict(dig(self.raw, "kubernetes", "workload"))

    @property
    def workload_kind(self) -> str:
        return _str(self.workload.get("kind"))

    @property
    def replicas(self) -> int:
        """Workload replicas; nil (or unreadable) counts as 1, as the platform does."""
        value = _int_or_none(self.workload.get("replicas"))
        return 1 if value is None else value

    @property
    def pvc_storage_map(self) -> dict[str, str]:
        return _str_map(self.workload.get("pvcStorageMap"))

    @property
    def pod_spec(self) -> dict[str, Any]:
        return _dict(dig(self.workload, "template", "spec"))

    @property
    def main_container(self) -> dict[str, Any]:
        """The container named `main` (the only one the platform wraps with Ray), or {}."""
        return dict(self._main())

    def _main(self) -> Mapping[str, Any]:
        """`main_container` itself, not a copy (for reads that only look)."""
        containers = dig(self.raw, "kubernetes", "workload", "template", "spec", "containers")
        for container in containers if isinstance(containers, list) else ():
            if isinstance(container, _MAPPING) and container.get("name") == keys.MAIN_CONTAINER:
                return container
        return _NONE

    @property
    def ptrace(self) -> bool:
        """Every container of the Pod template adds SYS_PTRACE (a debuggable Job: py-spy may read its stacks)."""
        containers = [c for c in _list(self.pod_spec.get("containers")) if isinstance(c, _MAPPING)]
        return bool(containers) and all(
            keys.PTRACE_CAPABILITY in _list(dig(c, "securityContext", "capabilities", "add")) for c in containers)

    @property
    def has_main_container(self) -> bool:
        return bool(self.main_container)

    @property
    def image(self) -> str:
        return _str(self.main_container.get("image"))

    @property
    def env(self) -> list[dict[str, Any]]:
        """The `main` container's env entries (dicts with `name` and `value` or `valueFrom`): those whose name is text
        (a list or an object named no variable, and as a key in rlark diff raised TypeError)."""
        return [dict(e) for e in _list(self.main_container.get("env"))
                if isinstance(e, _MAPPING) and isinstance(e.get("name"), str)]

    @property
    def role_display_name(self) -> str:
        """RLARK_TASK_ROLE of `main`: the role name the user typed; falls back to the task name. (Read in place:
        every job-list row asks it of every role.)"""
        env = self._main().get("env")
        for entry in env if isinstance(env, list) else ():
            if isinstance(entry, _MAPPING) and entry.get("name") == "RLARK_TASK_ROLE" \
                    and isinstance(entry.get("value"), str):
                return str(entry["value"])
        return self.name

    @property
    def requests(self) -> dict[str, Any]:
        return _dict(dig(self.main_container, "resources", "requests"))

    @property
    def limits(self) -> dict[str, Any]:
        return _dict(dig(self.main_container, "resources", "limits"))

    def resource(self, name: str) -> float:
        """Per-worker amount of a resource (limits first, then requests); 0 when absent."""
        for source in (self.limits, self.requests):
            amount = parse_quantity(source.get(name))
            if amount is not None:
                return amount
        return 0.0

    @property
    def gpu(self) -> float:
        return self.resource(keys.GPU_RESOURCE)

    @property
    def devices(self) -> dict[str, float]:
        """`rlinf.io/*` device resources per worker."""
        names = {n for n in list(self.limits) + list(self.requests) if str(n).startswith(keys.DEVICE_PREFIX)}
        return {name: self.resource(name) for name in sorted(names)}

    @property
    def volumes(self) -> list[dict[str, Any]]:
        return [dict(v) for v in _list(self.pod_spec.get("volumes")) if isinstance(v, _MAPPING)]

    @property
    def mounts(self) -> list[dict[str, Any]]:
        """The `main` container's mounts resolved against volumes: {target, type host|storage|other, source}."""
        by_name = {_str(v.get("name")): v for v in self.volumes}
        result = []
        for mount in _list(self.main_container.get("volumeMounts")):
            if not isinstance(mount, _MAPPING):
                continue
            volume = by_name.get(_str(mount.get("name")), {})
            if isinstance(volume.get("hostPath"), _MAPPING):
                kind, source = "host", _str(volume["hostPath"].get("path"))
            elif isinstance(volume.get("persistentVolumeClaim"), _MAPPING):
                kind, source = "storage", _str(volume["persistentVolumeClaim"].get("claimName"))
            else:
                kind, source = "other", ""
            result.append({"target": _str(mount.get("mountPath")), "type": kind, "source": source,
                           "volume": _str(mount.get("name"))})
        return result


def task_phases(raw: Any) -> list[str]:
    """A Job dict's `status.tasks` phases, one per entry ("" when missing or wrongly typed)."""
    return [_str(t.get("phase")) for t in _list(dig(raw, "status", "tasks")) if isinstance(t, _MAPPING)]


def shown_status(stopped: bool, phase: str, phases: list[str]) -> str:
    """The status the console shows for a Job: Stopped if stopped (`spec.stopped` or the phase); a Running phase
    refined by its Tasks' phases (Failed, all Succeeded, none Running yet: Pending); else the phase, or Pending."""
    if stopped or phase == "Stopped":
        return "Stopped"
    if phase == "Running":
        if "Failed" in phases:
            return "Failed"
        if phases and all(p == "Succeeded" for p in phases):
            return "Succeeded"
        if "Running" not in phases:
            return "Pending"
    return phase or "Pending"


class Job(_View):
    """A `rlinf.io/v1alpha1` Job (cluster-scoped): roles as `spec.tasks`, phase, records kept with it."""

    __slots__ = ()

    @property
    def display_name(self) -> str:
        """The display-name annotation, else the label of that name (as `annotations` and `labels` have them,
        read without copying either: every job-list row asks it)."""
        meta = self.raw.get("metadata")
        meta = meta if isinstance(meta, _MAPPING) else _NONE
        for source in (meta.get("annotations"), meta.get("labels")):
            value = source.get(keys.DISPLAY_NAME_ANNOTATION) if isinstance(source, _MAPPING) else None
            if isinstance(value, str) and value:
                return value
        return ""

    @property
    def domain(self) -> str:
        return _str(dig(self.raw, "spec", "domain"))

    @property
    def ssh_public_key(self) -> str:
        return _str(dig(self.raw, "spec", "sshPublicKey"))

    @property
    def stopped(self) -> bool:
        return dig(self.raw, "spec", "stopped") is True

    @property
    def tasks(self) -> list[TaskSpec]:
        return [TaskSpec(t) for t in _list(dig(self.raw, "spec", "tasks")) if isinstance(t, _MAPPING)]

    @property
    def head_task(self) -> TaskSpec | None:
        """The first task with `head: true` (the Header role), or None."""
        return next((t for t in self.tasks if t.head), None)

    @property
    def head_task_name(self) -> str:
        """Full Task name of the Header role (`<job>-<task>`), or ""."""
        head = self.head_task
        return f"{self.name}-{head.name}" if head else ""

    def task_name(self, task: TaskSpec) -> str:
        """Task object name of one role: `<job>-<task>`."""
        return f"{self.name}-{task.name}"

    @property
    def total_nodes(self) -> int:
        return sum(t.replicas for t in self.tasks)

    @property
    def job_type(self) -> str:
        from rlark_tui.model.naming import job_type
        return job_type(t.role for t in self.tasks)

    @property
    def status_tasks(self) -> list[dict[str, Any]]:
        """`status.tasks` entries as {name, phase, message} strings ("" for a missing or wrongly typed field).
        `name` is the Task's object name `<job>-<task>`: the platform's controller writes the short role name
        (`actor`), older writers the long one; both forms are read."""
        specs = self.tasks
        long_names = {self.task_name(t) for t in specs}
        short_names = {t.name: self.task_name(t) for t in specs}
        entries = []
        for t in _list(dig(self.raw, "status", "tasks")):
            if isinstance(t, _MAPPING):
                entry = {key: _str(t.get(key)) for key in ("name", "phase", "message")}
                if entry["name"] not in long_names and entry["name"] in short_names:
                    entry["name"] = short_names[entry["name"]]
                entries.append(entry)
        return entries

    @property
    def start_time(self) -> str:
        return _str(dig(self.raw, "status", "startTime"))

    @property
    def end_time(self) -> str:
        return _str(dig(self.raw, "status", "endTime"))

    @property
    def task_phases(self) -> list[str]:
        """The phase of each `status.tasks` entry ("" when missing or wrongly typed)."""
        return task_phases(self.raw)

    @property
    def shown_status(self) -> str:
        """The status the console shows: Stopped if stopped; a Running phase refined by task phases."""
        return shown_status(self.stopped, self.phase, self.task_phases)

    @property
    def workers_running(self) -> int:
        return self.task_phases.count("Running")

    def _json_annotation(self, key: str) -> dict[str, Any]:
        try:
            value = load_json(self.annotations.get(key, ""))
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    @property
    def launch_record(self) -> dict[str, Any]:
        """The launch record written by rlark-tui at submit (annotation `rlark.io/launch-record`), or {}."""
        return self._json_annotation(keys.LAUNCH_RECORD_ANNOTATION)

    @property
    def deployment_plan(self) -> dict[str, Any]:
        """The deployment plan written by rlark-tui at submit (annotation `rlark.io/deployment-plan`), or {}."""
        return self._json_annotation(keys.DEPLOYMENT_PLAN_ANNOTATION)


class Task(_View):
    """A `rlinf.io` Task (namespaced `rlark-<id>`): one role of a Job as the agent runs it."""

    __slots__ = ()

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(dig(self.raw, "spec"))

    @property
    def job_name(self) -> str:
        return self.labels.get(keys.JOB_LABEL, "")

    @property
    def is_head(self) -> bool:
        return self.annotations.get(keys.RAY_ROLE_ANNOTATION) == "head" or self.spec.head

    @property
    def rank_start(self) -> int | None:
        return _int_or_none(self.annotations.get(keys.RAY_RANK_START_ANNOTATION))

    @property
    def total_nodes(self) -> int | None:
        return _int_or_none(self.annotations.get(keys.RAY_TOTAL_NODES_ANNOTATION))

    @property
    def head_task_name(self) -> str:
        return self.annotations.get(keys.RAY_HEAD_TASK_ANNOTATION, "")

    @property
    def replicas(self) -> int:
        return self.spec.replicas

    @property
    def observed_nodes(self) -> list[str]:
        return [n for n in _list(dig(self.raw, "status", "observedNodes")) if isinstance(n, str)]

    @property
    def events(self) -> list[dict[str, Any]]:
        """The first MAX_EVENTS of the status's events."""
        return _events(self.raw)

    @property
    def event_count(self) -> int:
        return len(_list(dig(self.raw, "status", "events")))

    @property
    def pull_progress(self) -> list[dict[str, Any]]:
        return [dict(e) for e in _list(dig(self.raw, "status", "pullProgress")) if isinstance(e, _MAPPING)]

    @property
    def tensorboard_proxy(self) -> str:
        return _str(dig(self.raw, "status", "tensorBoardProxy"))


class Pod(_View):
    """A `rlinf.io` Pod CR: the mirror of one data-plane pod (name = pod UID, namespace = cluster)."""

    __slots__ = ()

    @property
    def task_name(self) -> str:
        return self.labels.get(keys.TASK_NAME_LABEL) or _str(dig(self.raw, "spec", "taskName"))

    @property
    def pod_name(self) -> str:
        """The data-plane pod name (`<task>-<ordinal>` for StatefulSets)."""
        return _str(dig(self.raw, "spec", "podName")) or self.labels.get("rlark.io/local-pod-name", "")

    @property
    def pod_namespace(self) -> str:
        return _str(dig(self.raw, "spec", "podNamespace")) or self.labels.get(
            "rlark.io/local-pod-namespace", "")

    @property
    def domain(self) -> str:
        return _str(dig(self.raw, "spec", "domain"))

    @property
    def ordinal(self) -> int | None:
        """The text after the pod name's last `-` as a number (a StatefulSet ordinal), or None."""
        return ascii_int(self.pod_name.rpartition("-")[2]) if "-" in self.pod_name else None

    @property
    def cluster(self) -> str:
        return self.namespace

    @property
    def node(self) -> str:
        return _str(dig(self.raw, "status", "node"))

    @property
    def ip(self) -> str:
        return _str(dig(self.raw, "status", "ip"))


class Node(_View):
    """A `rlinf.io` Node CR: one machine of member cluster `rlark-<id>` with its labels and capacity."""

    __slots__ = ()

    @property
    def cluster(self) -> str:
        """Cluster namespace `rlark-<id>`: the namespace, else the `rlark.io/cluster-id` label."""
        return cluster_of(self.raw)

    @property
    def online(self) -> bool:
        return self.phase == "Online"

    @property
    def unschedulable(self) -> bool:
        return dig(self.raw, "spec", "unschedulable") is True

    @property
    def schedulable(self) -> bool:
        """Online and not cordoned, as the console counts it."""
        return self.online and not self.unschedulable

    @property
    def disk_pressure(self) -> bool:
        return dig(self.raw, "status", "diskPressure") is True

    @property
    def gpu_model(self) -> str:
        """`rlark.io/gpu-model`: the annotation, else the label of that name (the console reads both)."""
        return self.annotations.get(keys.GPU_MODEL_ANNOTATION) or self.labels.get(keys.GPU_MODEL_ANNOTATION, "")

    def _amount(self, section: str, resource: str) -> float | None:
        section_map = dig(self.raw, "status", section)
        if not isinstance(section_map, _MAPPING) or resource not in section_map:
            return None
        return parse_quantity(section_map[resource])

    def capacity(self, resource: str) -> float | None:
        return self._amount("capacity", resource)

    def allocatable(self, resource: str) -> float | None:
        """Allocatable amount of a resource; None when the Node does not report it."""
        return self._amount("allocatable", resource)

    def used(self, resource: str) -> float:
        return self._amount("used", resource) or 0.0

    def free(self, resource: str) -> float | None:
        """Allocatable minus used; None when the Node does not report the resource."""
        allocatable = self.allocatable(resource)
        return None if allocatable is None else allocatable - self.used(resource)

    @property
    def resources(self) -> list[str]:
        """Names of the resources the Node reports as allocatable."""
        return sorted(str(k) for k in _dict(dig(self.raw, "status", "allocatable")))

    @property
    def device_resources(self) -> list[str]:
        return [r for r in self.resources if r.startswith(keys.DEVICE_PREFIX)]

    @property
    def addresses(self) -> list[dict[str, Any]]:
        return [dict(a) for a in _list(dig(self.raw, "status", "addresses")) if isinstance(a, _MAPPING)]

    @property
    def internal_ip(self) -> str:
        for address in self.addresses:
            if address.get("type") == "InternalIP":
                return _str(address.get("address"))
        return ""

    @property
    def events(self) -> list[dict[str, Any]]:
        """The first MAX_EVENTS of the status's events."""
        return _events(self.raw)

    @property
    def event_count(self) -> int:
        return len(_list(dig(self.raw, "status", "events")))
