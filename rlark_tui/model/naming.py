"""Names the platform derives or limits: task names from role names, job type from roles, DNS label rules.

Pure string rules from rlark-platform.md §2 and §4 and requirements W3/W4.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

DNS_LABEL_MAX = 63
STATEFULSET_NAME_MAX = 52
"""`<job>-<task>`: longer StatefulSet names break the pods' controller-revision label."""

HEAD_SERVICE_SUFFIX = "-ray-head"

_JOB_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

JOB_TYPES = ("RL", "Evaluation", "DataCollection", "Custom")

_ROLE_BY_NAME = MappingProxyType({
    "actor": "Actor", "learner": "Actor", "evaluator": "Actor", "collector": "Actor",
    "rollout": "Rollout", "camera worker": "Rollout", "robot operator": "Rollout",
    "environment": "Env", "env worker": "Env", "uploader": "Env", "robot worker": "Env",
})


def derive_task_name(role_name: str) -> str:
    """`spec.tasks[].name` of a role: lower-cased, characters outside `[a-z0-9-]` → `-`, dashes collapsed,
    ends trimmed (`Environment` → `environment`, `New Role` → `new-role`)."""
    if not isinstance(role_name, str):
        return ""
    return _derived(role_name)


@lru_cache(maxsize=128)
def _derived(role_name: str) -> str:
    """Derived once per role name: the wizard checks the draft at every change and a check asks each role's task
    name hundreds of times (the Header role, duplicates, name lengths), and a Job author's 100 KB role name took
    5 ms each, seconds a step."""
    lowered = re.sub(r"[^a-z0-9-]", "-", role_name.strip().lower())
    return re.sub(r"-{2,}", "-", lowered).strip("-")


def platform_role(role_name: str) -> str:
    """TaskSpec `role` (Actor | Rollout | Env) for a role name, as the console maps it (default Actor)."""
    lowered = role_name.strip().lower() if isinstance(role_name, str) else ""
    if lowered in _ROLE_BY_NAME:
        return _ROLE_BY_NAME[lowered]
    if "env" in lowered or "robot" in lowered:
        return "Env"
    if "rollout" in lowered or "camera" in lowered:
        return "Rollout"
    return "Actor"


def job_type(roles: Iterable[Any]) -> str:
    """Job type shown by the console from the tasks' `role` values (strings or task dicts):
    any Actor → RL; Env and Rollout → Evaluation; Env → DataCollection; Rollout → RL; else Custom."""
    present = set()
    for item in roles:
        value = item.get("role") if isinstance(item, Mapping) else item
        if isinstance(value, str):
            present.add(value)
    if "Actor" in present:
        return "RL"
    if "Env" in present and "Rollout" in present:
        return "Evaluation"
    if "Env" in present:
        return "DataCollection"
    if "Rollout" in present:
        return "RL"
    return "Custom"


def is_job_name(name: object) -> bool:
    """1–63 chars of `[a-z0-9-]`, starting with a letter, not ending with `-` (W3 + head Service rule)."""
    return isinstance(name, str) and len(name) <= DNS_LABEL_MAX and bool(_JOB_NAME.match(name))


def task_object_name(job_name: str, task_name: str) -> str:
    """Name of the Task and its StatefulSet: `<job>-<task>`."""
    return f"{job_name}-{task_name}"


def head_service_name(job_name: str, head_task_name: str) -> str:
    """The head Service `<job>-<task>-ray-head` (must be a DNS-1035 label ≤ 63)."""
    return f"{job_name}-{head_task_name}{HEAD_SERVICE_SUFFIX}"


def tensorboard_url(gateway: str | None, task_name: str, reported: str = "") -> str:
    """L6: the TensorBoard link of a Task, on the gateway: the proxy path the gateway's Task answer reports
    (`status.tensorBoardProxy`), else its fixed route `/api/v1/rlinf.io/v1alpha1/tasks/<task>/tensorboard/`."""
    path = reported or f"/api/v1/rlinf.io/v1alpha1/tasks/{task_name}/tensorboard/"
    if path.startswith(("http://", "https://")) or not gateway:
        return path
    return gateway.rstrip("/") + "/" + path.lstrip("/")


def volume_name(mount_path: str) -> str:
    """Volume name of a mount as the console derives it (`/mnt/ckpt` → `mnt-ckpt`, `vol` if empty), made a
    valid DNS-1123 label: lower-cased, other characters → `-`, at most 63 characters."""
    name = derive_task_name(mount_path.replace("/", "-")) if isinstance(mount_path, str) else ""
    return name[:DNS_LABEL_MAX].strip("-") or "vol"
