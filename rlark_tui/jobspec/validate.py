"""Every create-job rule (W1–W14) and platform pitfall (rlark-platform.md §2, §6) checked on a JobDraft.

Pure: JobDraft + Node list (+ live facts when known) → Findings with field paths like `roles[1].selector`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from rlark_tui.jobspec.draft import DRAFT_TYPES, MOUNT_TYPES, PLACEMENT_MODES, PLATFORM_ROLES, JobDraft, RoleDraft
from rlark_tui.jobspec.findings import Finding, error, field_path, ordered, warning
from rlark_tui.jobspec.render import RolePlacement, role_matches, role_placement, role_replicas
from rlark_tui.model import keys
from rlark_tui.model.naming import (
    DNS_LABEL_MAX,
    STATEFULSET_NAME_MAX,
    head_service_name,
    job_type,
    task_object_name,
)
from rlark_tui.model.objects import Job, Node
from rlark_tui.model.placement import (
    COMPUTE,
    DEVICE,
    GPU,
    Hardware,
    as_nodes,
    gpu_resource,
    hardware_choices,
    node_clusters,
    node_slots,
)
from rlark_tui.model.quantity import parse_quantity
from rlark_tui.text import patterns
from rlark_tui.text.redact import is_secret_name, redact_text

OFFERED_SHOWN = 20
"""The most models a placement on a model no Node has names (the first, then how many more): a cluster's Nodes name
their models, and 10,000 were one line of 10,000 names."""
RESERVED_ENV = ("POD_NAME", "RLINF_NODE_RANK")
RESERVED_ENV_PREFIX = "RLARK_"
SHADOWED_PATHS = ("/bin", "/sbin", "/lib", "/lib64", "/usr", "/etc", "/opt", "/root", "/home", "/app", "/code",
                  "/src", "/workspace", "/rlark", "/sshd", "/var/run/rlark")
"""Image code/config paths (and the platform's own `/rlark/scripts`, `/sshd`) a mount target must not cover."""
SYSTEM_TREES = ("/bin", "/sbin", "/lib", "/lib64", "/usr", "/etc", "/opt", "/rlark")

DRAFT_TYPE_TO_JOB_TYPE = MappingProxyType({"rl": "RL", "data-collection": "DataCollection", "evaluation": "Evaluation",
                           "custom": "Custom"})
_JOB_NAME_CHARS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._\-/:]*(@sha256:[0-9a-f]+)?$", re.I)
_SSH_KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
                  "ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com")
_FULL_SHA = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64})$")
_SCRIPT_CODE_PATH = re.compile(r"\bcd\s+(?P<dir>/[\w.@+/-]*)|(?P<run>/[\w.@+/-]+)")
"""A `cd /dir`, or a run of path characters from a `/` (each claimed once: linear in the script)."""
_CODE_FILE_END = re.compile(r"\.(?:sh|py|ya?ml|toml|cfg|ini)(?!\w)")
"""Where a code file's name may end in a run of path characters."""
_DIR_AFTER = re.compile(r"(?<!\s)\s+(/[\w.@+/-]*)")
"""The directory after a `cd` that ends a run of path characters (`/opt/cd /work`)."""
_WORD_CHAR = re.compile(r"\w")


def _names(nodes: Iterable[Node], limit: int = 5) -> str:
    names = [n.name for n in nodes]
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _shown(text: str, limit: int = 40) -> str:
    """A user value as quoted in a message: cut to `limit` characters."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _under(path: str, root: str) -> bool:
    """Whether `path` is `root` or inside it (both absolute, no trailing slash needed)."""
    root = root.rstrip("/") or "/"
    return root == "/" or path == root or path.startswith(root + "/")


def validate(draft: JobDraft, nodes: Iterable[Any], existing_jobs: Iterable[Any] | None = None, *,
             storage_classes: Mapping[str, Collection[str]] | None = None,
             domains: Collection[str] | None = None) -> list[Finding]:
    """All findings for a draft against the current Node list (dicts or Node views), errors first.

    `existing_jobs` (names, Job dicts or views), `storage_classes` (cluster → class names; the cluster as its
    namespace `rlark-gpu-a` or as the gateway's agent ID `gpu-a`: both are matched) and
    `domains` (Domain names) are checked when known (live); None means offline: those checks only warn.
    """
    nodes = as_nodes(nodes)
    matches = [role_matches(role, nodes) for role in draft.roles]
    replicas = [role_replicas(role, matched) for role, matched in zip(draft.roles, matches)]
    findings: list[Finding] = []
    findings += _check_name(draft, existing_jobs)
    findings += _check_type(draft)
    findings += _check_roles(draft)
    findings += _check_header(draft, matches, replicas)
    clusters = list(node_clusters(nodes))
    for index, role in enumerate(draft.roles):
        path = f"roles[{index}]"
        if role.placed:
            findings += _check_placement(path, role, role_placement(role, nodes), nodes, clusters)
        else:
            findings += _check_selector(path, role, matches[index], nodes, clusters)
        findings += _check_image(path, role, draft.roles[0])
        findings += _check_env(path, role)
        findings += _check_mounts(path, role, draft, index, replicas[index], storage_classes)
        findings += _check_requests(path, role)
    findings += _check_capacity(draft, matches)
    findings += _check_shared(draft, matches, nodes)
    findings += _check_domain(draft, matches, domains)
    findings += _check_common(draft)
    findings += _check_debuggable(draft)
    findings += _check_record(draft, sum(replicas))
    return ordered(findings)


def _check_debuggable(draft: JobDraft) -> list[Finding]:
    """A debuggable Job's Header role gets RAY_DASHBOARD_ENABLE_PROFILING=1, whatever its env says."""
    header = draft.header_index()
    if not draft.debuggable or header is None:
        return []
    value = draft.roles[header].env.get(keys.PROFILING_ENV)
    if value is None or value == "1":
        return []
    return [warning(field_path(f"roles[{header}].env", keys.PROFILING_ENV),
                    f"is {value!r} here, but a debuggable Job sets it to 1 on the Header role")]


def _existing_names(existing_jobs: Iterable[Any]) -> set[str]:
    names = set()
    for job in existing_jobs:
        names.add(job if isinstance(job, str) else (job if isinstance(job, Job) else Job(job)).name)
    return names


def _check_name(draft: JobDraft, existing_jobs: Iterable[Any] | None) -> list[Finding]:
    name = draft.name
    if not name:
        return [error("name", "required: the Job name (lowercase letters, digits and '-')")]
    findings = []
    if len(name) > DNS_LABEL_MAX:
        findings.append(error("name", f"{len(name)} characters; at most {DNS_LABEL_MAX}"))
    if not _JOB_NAME_CHARS.match(name):
        findings.append(error("name", "use lowercase letters, digits and '-', not starting or ending with '-'"))
    elif not name[0].isalpha():
        findings.append(error("name", "must start with a letter: the head Service `<job>-<task>-ray-head` "
                                      "must be a DNS-1035 label"))
    for role in draft.roles:
        task = role.task_name
        if not task:
            continue
        statefulset = task_object_name(name, task)
        if len(statefulset) > STATEFULSET_NAME_MAX:
            findings.append(error("name", f"too long with role '{_shown(role.name)}': `{_shown(statefulset, 80)}` has "
                                          f"{len(statefulset)} characters, a StatefulSet name at most "
                                          f"{STATEFULSET_NAME_MAX}"))
    header = draft.header_index()
    if header is not None and draft.roles[header].task_name:
        service = head_service_name(name, draft.roles[header].task_name)
        if len(service) > DNS_LABEL_MAX:
            findings.append(error("name", f"too long: the head Service `{service}` has {len(service)} "
                                          f"characters, at most {DNS_LABEL_MAX}"))
    if existing_jobs is not None and name in _existing_names(existing_jobs):
        findings.append(error("name", f"a Job named '{_shown(name)}' already exists"))
    return findings


def _check_type(draft: JobDraft) -> list[Finding]:
    """A stated type the roles contradict warns (the console derives the type); custom never can match."""
    if not draft.type:
        return []
    if draft.type not in DRAFT_TYPES:
        return [error("type", f"'{_shown(draft.type)}' is not a job type; use one of: {', '.join(DRAFT_TYPES)}")]
    shown = job_type(role.platform_role for role in draft.roles)
    wanted = DRAFT_TYPE_TO_JOB_TYPE[draft.type]
    if draft.roles and shown != wanted and draft.type != "custom":
        return [warning("type", f"the console derives the type from the roles and will show this Job as "
                                f"{shown}, not {wanted}")]
    return []


def _check_roles(draft: JobDraft) -> list[Finding]:
    if not draft.roles:
        return [error("roles", "add at least one role")]
    findings = []
    seen: dict[str, int] = {}
    for index, role in enumerate(draft.roles):
        path = f"roles[{index}]"
        if not role.name.strip():
            findings.append(error(f"{path}.name", "required: a role name"))
        elif not role.task_name:
            findings.append(error(f"{path}.name", "needs at least one letter or digit: the task name is "
                                                  "derived from it"))
        elif role.task_name in seen:
            findings.append(error(f"{path}.name", f"gives the same task name '{role.task_name}' as "
                                                  f"roles[{seen[role.task_name]}]; role names must be unique "
                                                  f"ignoring case"))
        else:
            seen[role.task_name] = index
        if role.role and role.role not in PLATFORM_ROLES:
            findings.append(error(f"{path}.role", f"'{_shown(role.role)}' is not a platform role; use "
                                                  f"{', '.join(PLATFORM_ROLES)}"))
    return findings


def _check_header(draft: JobDraft, matches: list[list[Node]], replicas: list[int]) -> list[Finding]:
    known = ", ".join(role.name for role in draft.roles if role.name) or "none yet"
    if not draft.header.strip():
        return [error("header", f"required: name the Header role (one of: {known})")]
    index = draft.header_index()
    if index is None:
        return [error("header", f"no role named '{_shown(draft.header)}' (roles: {known})")]
    matched, head = matches[index], draft.roles[index]
    if head.placed and replicas[index] != 1:
        return [error(f"roles[{index}].{'nodes' if head.nodes else 'workers'}",
                      f"the Header role has {replicas[index]} workers; it must have exactly 1 (every Header "
                      f"replica runs its own Ray head)")]
    if head.selector and not head.placed and len(matched) != 1:
        found = f" ({_names(matched)})" if matched else ""
        return [error(f"roles[{index}].selector",
                      f"the Header role's selector matches {len(matched)} Nodes{found} across all clusters; "
                      f"it must match exactly 1 (every Header replica runs its own Ray head)")]
    return []


def _check_cluster(path: str, role: RoleDraft, nodes: Sequence[Node], clusters: list[str]) -> list[Finding]:
    findings = []
    if not role.cluster:
        findings.append(error(f"{path}.cluster", "required: the cluster namespace the role runs in "
                                                 f"(one of: {', '.join(clusters) or 'no Nodes known'})"))
    elif nodes and role.cluster not in clusters:
        findings.append(error(f"{path}.cluster", f"no Node is in cluster '{_shown(role.cluster)}' "
                                                 f"(known: {', '.join(clusters)})"))
    return findings


def _unit(hardware: Hardware | None, amount: float = 2) -> str:
    kind = hardware.kind if hardware is not None else GPU
    word = {GPU: "GPU", DEVICE: "device", COMPUTE: "slot"}[kind]
    return word if amount == 1 else word + "s"


def _check_placement(path: str, role: RoleDraft, placed: RolePlacement, nodes: Sequence[Node],
                     clusters: list[str]) -> list[Finding]:
    """A hardware placement, as the console's picker and its checks, plus the platform's one worker of a role
    per Node: the model exists in the cluster; automatic: workers ≥ 1, workers × per-worker ≤ the model's free
    slots, and as many eligible Nodes as workers; picked: each Node exists, is of the model, schedulable and has
    the per-worker slots free."""
    findings = _check_cluster(path, role, nodes, clusters)
    if role.selector:
        findings.append(error(f"{path}.selector", "give a selector or a hardware placement, not both: the "
                                                  "placement writes the nodeSelector (the hostnames of its Nodes)"))
    where = role.cluster or "any cluster"
    hardware, amount = placed.hardware, placed.per_worker
    if role.hardware and hardware is None:
        models = [choice.model for choice in hardware_choices(nodes, role.cluster)]
        offered = ", ".join(models[:OFFERED_SHOWN]) or "none"
        if len(models) > OFFERED_SHOWN:
            offered += f" and {len(models) - OFFERED_SHOWN:,} more"
        findings.append(error(f"{path}.hardware", f"no Node in {where} has '{_shown(role.hardware)}' "
                                                  f"(offered: {offered})"))
        return findings
    if not role.nodes:
        return findings + _check_automatic(path, role, placed)
    if role.workers and role.workers != len(role.nodes):
        findings.append(error(f"{path}.workers", f"the worker count follows the picked Nodes ({len(role.nodes)}); "
                                                 f"leave workers out or pick {role.workers} Nodes"))
    seen: set[str] = set()
    for name in role.nodes:
        if name in seen:
            findings.append(error(f"{path}.nodes", f"{_shown(name)} is picked twice (one worker per Node)"))
        seen.add(name)
    for name in placed.missing:
        findings.append(error(f"{path}.nodes", f"no Node '{_shown(name)}' in {where}"))
    for node in placed.nodes:
        slots = node_slots(node)
        if hardware is not None and (slots is None or (slots.kind, slots.model) != (hardware.kind, hardware.model)):
            findings.append(error(f"{path}.nodes", f"{node.name} is {slots.model if slots else 'no hardware'}, "
                                                   f"not {hardware.model}"))
        elif node.phase == "Offline" or node.unschedulable:
            state = "Offline" if node.phase == "Offline" else "cordoned"
            findings.append(error(f"{path}.nodes", f"{node.name} is {state}: its worker would stay Pending"))
        elif amount > 0:
            free = slots.free if hardware is not None and slots is not None else \
                max(0.0, node.free(gpu_resource(node)) or 0.0)
            if free < amount:
                findings.append(error(f"{path}.nodes", f"{node.name} has {_number(free)} {_unit(hardware, free)} "
                                                       f"free; a worker asks {_number(amount)}"))
    return findings


def _check_automatic(path: str, role: RoleDraft, placed: RolePlacement) -> list[Finding]:
    hardware, amount, workers = placed.hardware, placed.per_worker, role.workers
    if hardware is None:
        return [error(f"{path}.hardware", "required with workers: the GPU or device model to place them on "
                                          "(or pick Nodes)")]
    if workers < 1:
        return [error(f"{path}.workers", "at least 1 worker")]
    unit = _unit(hardware, amount)
    eligible = len(placed.nodes)
    if not eligible:
        most = max((m.free for m in hardware.members if m.schedulable), default=0.0)
        return [error(f"{path}.hardware", f"no schedulable Node of {hardware.model} has {_number(amount)} {unit} "
                                          f"free (most on one Node: {_number(most)})")]
    if workers * amount > hardware.free:
        return [error(f"{path}.workers", f"{workers} workers × {_number(amount)} {unit} = "
                                         f"{_number(workers * amount)}, but {hardware.model} has only "
                                         f"{_number(hardware.free)} free")]
    if workers > eligible:
        return [error(f"{path}.workers", f"{workers} workers need {workers} Nodes (the platform puts at most one "
                                         f"worker of a role on a Node), but only {eligible} Node"
                                         f"{'s' if eligible != 1 else ''} of {hardware.model} "
                                         f"{'have' if eligible != 1 else 'has'} {_number(amount)} {unit} free")]
    return []


def _check_selector(path: str, role: RoleDraft, matched: list[Node], nodes: Sequence[Node],
                    clusters: list[str]) -> list[Finding]:
    findings = _check_cluster(path, role, nodes, clusters)
    if not role.selector:
        findings.append(error(f"{path}.selector", "empty: the Task would land in namespace `default`, where no "
                                                  "agent runs it; select Nodes with a label such as "
                                                  "kubernetes.io/hostname"))
        return findings
    for key, value in role.selector.items():
        where = field_path(f"{path}.selector", key)
        if key == keys.CLUSTER_ID_LABEL:
            findings.append(error(where, "is a label of Node CRs only, not of real nodes: the pods would never "
                                         "schedule; use kubernetes.io/hostname or another node label"))
        elif not _LABEL_KEY.match(key) or len(key) > 253:
            findings.append(error(where, "is not a valid label key"))
        if "," in value:
            findings.append(error(where, "one value per key (no `a,b` multi-values); combine distinct keys "
                                         "instead"))
        elif not value:
            findings.append(error(where, "empty value"))
        elif len(value) > DNS_LABEL_MAX or not _LABEL_VALUE.match(value):
            findings.append(error(where, "is not a valid label value"))
    if not matched:
        suffix = "" if nodes else " (the Node list is empty)"
        findings.append(error(f"{path}.selector", f"matches no Node{suffix}"))
        return findings
    by_cluster: dict[str, list[Node]] = defaultdict(list)
    for node in matched:
        by_cluster[node.cluster].append(node)
    if len(by_cluster) > 1:
        spread = "; ".join(f"{c or '?'}: {_names(ns)}" for c, ns in sorted(by_cluster.items()))
        findings.append(error(f"{path}.selector", f"matches Nodes in {len(by_cluster)} clusters ({spread}); "
                                                  f"add a label that confines the role to one cluster"))
    elif role.cluster and role.cluster in clusters and role.cluster not in by_cluster:
        findings.append(error(f"{path}.cluster", f"the selector matches Nodes in {next(iter(by_cluster))}, "
                                                 f"not in '{_shown(role.cluster)}'"))
    offline = [n for n in matched if not n.online]
    cordoned = [n for n in matched if n.online and n.unschedulable]
    for group, state in ((offline, "Offline"), (cordoned, "unschedulable")):
        if len(group) == 1:
            findings.append(warning(f"{path}.selector", f"matched Node {group[0].name} is {state}: it counts "
                                                        f"toward replicas, but its Pod stays Pending"))
        elif group:
            findings.append(warning(f"{path}.selector", f"matched Nodes {_names(group)} are {state}: they count "
                                                        f"toward replicas, but their Pods stay Pending"))
    return findings


def _check_image(path: str, role: RoleDraft, first: RoleDraft) -> list[Finding]:
    image = role.image.strip()
    where = f"{path}.image"
    if not image:
        return [error(where, "required: the image of the `main` container")]
    if any(c.isspace() for c in role.image):
        return [error(where, "must not contain spaces")]
    if not _IMAGE.match(image):
        return [error(where, "is not an image reference (registry/name[:tag][@sha256:digest])")]
    findings = []
    if "@sha256:" in image:
        if not _DIGEST.search(image):
            findings.append(error(where, "digest must be sha256: followed by 64 hex digits"))
    else:
        last = image.rsplit("/", 1)[-1]
        tag = last.split(":", 1)[1] if ":" in last else ""
        if tag in ("", "latest"):
            findings.append(warning(where, "`latest` (or no tag) is mutable: the run cannot be tied to one "
                                           "build; pin a digest (@sha256:...)"))
        else:
            findings.append(warning(where, f"tag '{_shown(tag)}' is mutable; prefer a digest (@sha256:...) so the run "
                                           f"check can verify the image"))
    if role is not first and first.image.strip() and image != first.image.strip():
        findings.append(warning(where, "differs from the image of roles[0]; RLark does not check that Ray, "
                                       "Python and RLinf versions are compatible across images"))
    return findings


def _check_env(path: str, role: RoleDraft) -> list[Finding]:
    findings = []
    for name, value in role.env.items():
        where = field_path(f"{path}.env", name)
        if not _ENV_NAME.match(name):
            findings.append(error(where, "is not a valid variable name (letters, digits, '_', '-', '.'; "
                                         "not starting with a digit)"))
        elif name.upper().startswith(RESERVED_ENV_PREFIX) or name in RESERVED_ENV:
            findings.append(error(where, "is set by the platform (RLARK_*, POD_NAME, RLINF_NODE_RANK are "
                                         "reserved)"))
        elif value and (is_secret_name(name) or redact_text(value) != value):
            findings.append(warning(where, "looks like a secret: its value is stored in plain text in the Job, "
                                           "readable by everyone who can read Jobs"))
    return findings


def _code_paths(script: str) -> list[str]:
    """The directories a script changes into and the code files it names (`/opt/run.sh`), in order. A run of path
    characters is read once (the longest code file name it starts with); a `cd` it ends in still takes the path
    after it, as a scan from every `/` would."""
    paths: list[str] = []
    text, pos = script or "", 0
    while (match := _SCRIPT_CODE_PATH.search(text, pos)) is not None:
        pos = match.end()
        path = match.group("dir")
        if path is None:
            run, end = match.group("run"), 0
            for file_end in _CODE_FILE_END.finditer(run, 2):  # a name before the dot
                end = file_end.end()
            path = run[:end]
            if run.endswith("cd") and len(run) - 2 >= end and not _WORD_CHAR.match(run[-3]):
                after = _DIR_AFTER.match(text, pos)
                if after is not None:
                    paths.extend(p.rstrip("/") or "/" for p in (path, after.group(1)) if p)
                    pos = after.end()
                    continue
        if path:
            paths.append(path.rstrip("/") or "/")
    return paths


def _check_mounts(path: str, role: RoleDraft, draft: JobDraft, index: int, replicas: int,
                  storage_classes: Mapping[str, Collection[str]] | None) -> list[Finding]:
    findings = []
    targets: set[str] = set()
    scripts = [("prepare script", role.prepare_script)]
    if draft.header_index() == index:
        scripts.append(("run script", draft.run_script))
    for number, mount in enumerate(role.mounts):
        where = f"{path}.mounts[{number}]"
        if mount.type not in MOUNT_TYPES:
            findings.append(error(f"{where}.type", f"must be 'host' or 'storage', not '{_shown(mount.type)}'"))
        target = mount.target.rstrip("/") or mount.target
        if not target:
            findings.append(error(f"{where}.target", "required: the path inside the container"))
        elif not target.startswith("/"):
            findings.append(error(f"{where}.target", "must be an absolute path"))
        elif target in targets:
            findings.append(error(f"{where}.target", f"'{_shown(target)}' is mounted twice"))
        else:
            targets.add(target)
            findings += _shadow_findings(f"{where}.target", target, scripts)
        if mount.type == "host":
            if not mount.source:
                findings.append(error(f"{where}.source", "required: the host directory (it must exist on every "
                                                         "matched Node)"))
            elif not mount.source.startswith("/"):
                findings.append(error(f"{where}.source", "must be an absolute host path"))
            if mount.storage_class:
                findings.append(warning(f"{where}.storageClass", "ignored for a host mount"))
        elif mount.type == "storage":
            findings += _check_storage_class(where, role, mount.storage_class, storage_classes)
            if mount.source:
                findings.append(warning(f"{where}.source", "ignored for a storage mount"))
            if replicas > 1:
                findings.append(warning(where, f"one ReadWriteOnce claim is shared by all {replicas} workers of "
                                               f"this role; that works only if the storage driver allows "
                                               f"access from several Nodes"))
    return findings


def _shadow_findings(field: str, target: str, scripts: list[tuple[str, str]]) -> list[Finding]:
    covered = [p for p in SHADOWED_PATHS if _under(p, target)]
    inside = [t for t in SYSTEM_TREES if _under(target, t)]
    if covered or inside:
        what = covered[0] if covered else inside[0]
        return [warning(field, f"mounting over '{_shown(target)}' hides the image's {what}; code, config or the "
                               f"platform's scripts there would disappear")]
    for script_name, script in scripts:
        for used in _code_paths(script):
            if _under(used, target):
                return [warning(field, f"mounting over '{_shown(target)}' hides '{_shown(used)}' that the {script_name} uses "
                                       f"from the image")]
    return []


def _check_storage_class(where: str, role: RoleDraft, storage_class: str,
                         storage_classes: Mapping[str, Collection[str]] | None) -> list[Finding]:
    if not storage_class:
        return [error(f"{where}.storageClass", "required for a storage mount: a storage class of the role's "
                                               "cluster")]
    if storage_classes is None:
        return [warning(f"{where}.storageClass", f"storage class '{_shown(storage_class)}' cannot be checked offline; "
                                                 f"confirm it exists in {role.cluster or 'the cluster'}")]
    agent = role.cluster.removeprefix("rlark-")
    available = {*storage_classes.get(role.cluster, ()), *storage_classes.get(agent, ())}
    if storage_class not in available:
        return [error(f"{where}.storageClass",
                      f"cluster {role.cluster or '?'} has no storage class '{_shown(storage_class)}' "
                      f"(available: {', '.join(sorted(available)) or 'none'})")]
    return []


def _check_requests(path: str, role: RoleDraft) -> list[Finding]:
    findings = []
    for name, value in (("cpu", role.cpu), ("memory", role.memory)):
        if value:
            amount = parse_quantity(value)
            if amount is None or amount <= 0:
                findings.append(error(f"{path}.{name}", f"'{_shown(value)}' is not a positive quantity "
                                                        f"(e.g. {'16 or 500m' if name == 'cpu' else '64Gi'})"))
    for name in role.devices:
        if not name.startswith(keys.DEVICE_PREFIX) or name == keys.DEVICE_PREFIX:
            hint = "; put GPUs in `gpu`" if name == keys.GPU_RESOURCE else ""
            findings.append(error(field_path(f"{path}.devices", name), f"only rlinf.io/* device resources{hint}"))
    return findings


def _demands(role: RoleDraft) -> dict[str, tuple[float, str]]:
    """resource → (amount per worker, field suffix) for every resource the role asks for; a placed role's GPUs
    and `rlinf.io/device*` devices are its placement's to check."""
    result: dict[str, tuple[float, str]] = {}
    if role.gpu > 0 and not role.placed:
        result[keys.GPU_RESOURCE] = (float(role.gpu), "gpu")
    for name, amount in role.devices.items():
        if role.placed and (name == keys.DEVICE_RESOURCE or name.startswith(keys.DEVICE_RESOURCE + "-")):
            continue
        if amount > 0 and name.startswith(keys.DEVICE_PREFIX):
            result[name] = (float(amount), field_path("devices", name))
    for name, value in (("cpu", role.cpu), ("memory", role.memory)):
        quantity = parse_quantity(value) if value else None
        if quantity is not None and quantity > 0:
            result[name] = (quantity, name)
    return result


def _check_capacity(draft: JobDraft, matches: list[list[Node]]) -> list[Finding]:
    """Per worker: above a Node's allocatable → error; above its free capacity (with the other roles of
    this draft on the same Node) → warning; a GPU/device the Node does not report → warning."""
    on_node: dict[tuple[str, str], float] = defaultdict(float)
    for role, matched in zip(draft.roles, matches):
        for resource, (amount, _) in _demands(role).items():
            for node in matched:
                on_node[(node.cluster + "/" + node.name, resource)] += amount
    findings = []
    for index, (role, matched) in enumerate(zip(draft.roles, matches)):
        for resource, (amount, suffix) in _demands(role).items():
            where = f"roles[{index}].{suffix}"
            label = resource if resource not in (keys.GPU_RESOURCE,) else "GPUs"
            unreported, too_big, too_busy = [], [], []
            for node in matched:
                allocatable = node.allocatable(resource)
                if allocatable is None:
                    if resource not in ("cpu", "memory"):
                        unreported.append(node)
                elif amount > allocatable:
                    too_big.append((node, allocatable))
                else:
                    wanted = on_node[(node.cluster + "/" + node.name, resource)]
                    free = allocatable - node.used(resource)
                    if wanted > free:
                        too_busy.append((node, free, wanted))
            if unreported:
                findings.append(warning(where, f"Node(s) {_names(unreported)} report no {resource}; the Pod "
                                               f"would stay Pending there"))
            for node, allocatable in too_big[:5]:
                findings.append(error(where, f"{_fmt(resource, amount)} {label} per worker, but Node {node.name} "
                                             f"has only {_fmt(resource, allocatable)} allocatable"))
            for node, free, wanted in too_busy[:5]:
                findings.append(warning(where, f"Node {node.name} has {_fmt(resource, max(free, 0))} {label} "
                                               f"free; this draft asks {_fmt(resource, wanted)} there "
                                               f"(all roles on that Node)"))
    return findings


def _check_shared(draft: JobDraft, matches: list[list[Node]], nodes: Sequence[Node]) -> list[Finding]:
    """A placed role's GPUs on Nodes this draft's other roles also use (the console counts each role alone):
    warn when fewer listed Nodes keep a worker's GPUs than it has workers (automatic), or at a picked Node that
    does not keep them. Roles placed automatically elsewhere are not counted (their Nodes are not known)."""
    taken: dict[str, float] = defaultdict(float)
    for role, matched in zip(draft.roles, matches):
        if role.gpu > 0 and (not role.placed or role.nodes):
            for node in matched:
                taken[f"{node.cluster}/{node.name}"] += role.gpu
    findings = []
    for index, (role, matched) in enumerate(zip(draft.roles, matches)):
        placed = role_placement(role, nodes) if role.placed and role.gpu > 0 else None
        if placed is None or placed.hardware is None or placed.hardware.kind != GPU:
            continue
        own = role.gpu if role.nodes else 0
        short = []
        for node in matched:
            slots = node_slots(node)
            others = taken[f"{node.cluster}/{node.name}"] - own
            if others > 0 and slots is not None and slots.free - others < role.gpu:
                short.append((node, slots.free, others + role.gpu))
        if role.nodes:
            findings += [warning(f"roles[{index}].nodes", f"Node {node.name} has {_number(free)} GPUs free; this "
                                                          f"draft asks {_number(wanted)} there (all roles on that "
                                                          f"Node)") for node, free, wanted in short]
        elif short and len(matched) - len(short) < role.workers:
            fit = len(matched) - len(short)
            findings.append(warning(f"roles[{index}].workers", f"this draft's other roles take GPUs on "
                                                               f"{_names(n for n, _, _ in short)}: {fit} of the "
                                                               f"{len(matched)} Nodes {'keeps' if fit == 1 else 'keep'} "
                                                               f"{role.gpu} GPUs free for {role.workers} workers"))
    return findings


def _fmt(resource: str, amount: float) -> str:
    if resource == "memory":
        return f"{amount / 2**30:.4g}Gi"
    return _number(round(amount, 3))


def role_clusters(draft: JobDraft, matches: list[list[Node]]) -> set[str]:
    """The clusters the roles run in (a role matching no Node counts its `cluster`); more than one needs a
    network domain (W11b). `matches`: the Nodes each role's selector matches."""
    clusters: set[str] = set()
    for role, matched in zip(draft.roles, matches):
        clusters |= {n.cluster for n in matched} if matched else ({role.cluster} if role.cluster else set())
    return clusters


def _check_domain(draft: JobDraft, matches: list[list[Node]], domains: Collection[str] | None) -> list[Finding]:
    clusters = role_clusters(draft, matches)
    findings = []
    if len(clusters) > 1 and not draft.domain:
        head = draft.header_index()
        head_cluster = ""
        if head is not None:
            head_cluster = matches[head][0].cluster if matches[head] else draft.roles[head].cluster
        where = f" {head_cluster}" if head_cluster else " the head's cluster"
        findings.append(error("domain", f"roles run in {len(clusters)} clusters ({', '.join(sorted(clusters))}): "
                                        f"without a network domain the workers resolve the head's Service only "
                                        f"inside{where} and Ray never forms"))
    if draft.domain:
        if len(draft.domain) > 253 or not _DOMAIN.match(draft.domain):
            findings.append(error("domain", "is not a valid Domain name (lowercase letters, digits, '-', '.')"))
        elif domains is None:
            findings.append(warning("domain", f"network domain '{_shown(draft.domain)}' cannot be checked offline; "
                                              f"confirm it exists"))
        elif draft.domain not in domains:
            findings.append(error("domain", f"no network domain '{_shown(draft.domain)}' "
                                            f"(known: {', '.join(sorted(domains)) or 'none'})"))
    return findings


def ssh_key_problem(key: str) -> str:
    """Why an SSH public key is unusable, or "" when it is one well-formed OpenSSH public key line."""
    text = key.strip()
    if "PRIVATE KEY" in text:
        return "this is a private key; paste the public key (the .pub file) instead"
    if "\n" in text:
        return "must be a single OpenSSH public key on one line"
    parts = text.split()
    if len(parts) < 2 or parts[0] not in _SSH_KEY_TYPES:
        return f"must start with a key type ({', '.join(_SSH_KEY_TYPES[:3])}, ...) followed by the key"
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        return "the key part is not valid base64"
    if len(blob) < 8 or int.from_bytes(blob[:4], "big") != len(parts[0]) or blob[4:4 + len(parts[0])] != \
            parts[0].encode():
        return f"the key data does not match its type '{_shown(parts[0])}'"
    return ""


def _check_common(draft: JobDraft) -> list[Finding]:
    findings = []
    if not draft.run_script.strip():
        findings.append(error("runScript", "required: the command the Header role runs after the Ray cluster "
                                           "check"))
    if draft.ssh_public_key.strip():
        problem = ssh_key_problem(draft.ssh_public_key)
        if problem:
            findings.append(error("sshPublicKey", problem))
    if draft.tensorboard_dir:
        if not draft.tensorboard_dir.startswith("/"):
            findings.append(error("tensorboardDir", "must be an absolute path"))
        else:
            head = draft.header_index()
            mounts = draft.roles[head].mounts if head is not None else ()
            if not any(m.target.startswith("/") and _under(draft.tensorboard_dir, m.target) for m in mounts):
                findings.append(warning("tensorboardDir", "no mount of the Header role covers it: TensorBoard "
                                                          "logs go to a temporary volume and vanish with the Pod"))
    return findings


def _check_record(draft: JobDraft, planned: int) -> list[Finding]:
    record = draft.record
    findings = []
    code_ref = record.get("codeRef")
    if code_ref and not _FULL_SHA.match(code_ref):
        findings.append(warning("record.codeRef", "not a full commit SHA (40 hex digits); the run check "
                                                  "compares the full SHA"))
    for name in ("progressPattern", "startupMarker"):
        pattern = record.get(name)
        if pattern:
            try:
                patterns.compile_pattern(pattern)
            except patterns.PatternError as exc:
                findings.append(error(f"record.{name}", str(exc)))
                continue
            if patterns.has_nested_quantifier(pattern):
                findings.append(warning(f"record.{name}", "has a repeated group that repeats inside (as `(a+)+`): "
                                                          "such a pattern can take exponential time on a line that "
                                                          "almost matches; the run check gives up on it after "
                                                          f"{patterns.BUDGET_SECONDS:g} s"))
    mode = record.get("placementMode")
    if mode and mode not in PLACEMENT_MODES:
        findings.append(warning("record.placementMode", f"'{_shown(mode)}' is not a placement mode the run check "
                                                        f"derives ({', '.join(PLACEMENT_MODES)})"))
    expected = record.get("expectedNumNodes")
    if expected and expected != planned:
        findings.append(warning("record.expectedNumNodes", f"expects {expected} Ray nodes, but the roles have "
                                                           f"{planned} workers"))
    for name, value in record.items():
        if name not in ("progressPattern", "startupMarker") and isinstance(value, str) and redact_text(value) != value:
            findings.append(warning(f"record.{name}", "looks like it holds a secret; the record is stored on the "
                                                      "Job in plain text"))
    output = record.get("outputPath")
    if output:
        if not output.startswith("/"):
            findings.append(error("record.outputPath", "must be an absolute path"))
        elif not any(m.target.startswith("/") and _under(output, m.target)
                     for role in draft.roles for m in role.mounts):
            findings.append(warning("record.outputPath", "no mount covers it: outputs there are not persisted"))
    return findings

