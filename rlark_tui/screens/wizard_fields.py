"""The create-job wizard's text forms: parse and format selectors, devices, env and mounts, map field paths
to steps and widgets, and the Node facts shown beside the fields (matches, GPU maximum, label choices).

Pure (no Textual, no I/O): the wizard screen calls these; every rule itself lives in rlark_tui.model.validate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rlark_tui.model import keys
from rlark_tui.model.draft import Mount
from rlark_tui.model.findings import Finding
from rlark_tui.model.views import Node

STEP_NAMES = ("Roles and resources", "Worker config", "Common config", "YAML preview and submit")
JOB_TYPES = (("RL", "rl"), ("Data collection", "data-collection"), ("Evaluation", "evaluation"),
             ("Custom", "custom"))
PRESET_ROLES: dict[str, tuple[str, ...]] = {
    "rl": ("Actor", "Rollout", "Environment"),
    "data-collection": ("Environment",),
    "evaluation": ("Rollout", "Environment"),
    "custom": (),
}
"""W4 presets: the initial roles per job type (Custom starts with none)."""

RECORD_INPUTS = (("runId", "Run ID"), ("codeRef", "Code ref (full commit SHA)"),
                 ("configRef", "Config ref"), ("expectedNumNodes", "Expected cluster.num_nodes"),
                 ("progressPattern", "Progress pattern (regex)"), ("maxWaitSeconds", "Max wait (s)"),
                 ("outputPath", "Output path"))
RECORD_INTS = ("expectedNumNodes", "maxWaitSeconds")

_ROLE_PATH = re.compile(r"^roles\[(\d+)\](?:\.([A-Za-z]+)(.*))?$")
_STEP1_TOP = ("name", "displayName", "type", "header", "roles")
_STEP3_TOP = ("domain", "sshPublicKey", "runScript", "tensorboardDir")
_ROLE_STEP2 = ("role", "cluster", "selector", "gpu", "devices", "cpu", "memory", "image", "prepareScript", "env",
               "mounts")


@dataclass(frozen=True)
class Place:
    """Where a finding's field lives in the wizard: step 1–4, the role it concerns (or None) and the widget key
    (`name`, `role-name`, `selector`, `record-runId`, ...); `detail` is the rest of the path (`.FOO`, `[1].target`)."""

    step: int
    role: int | None
    key: str
    detail: str = ""


def place_of(field: str) -> Place:
    """The wizard place of a finding path such as `roles[1].selector.kubernetes.io/hostname`."""
    match = _ROLE_PATH.match(field)
    if match:
        index, name, rest = int(match.group(1)), match.group(2) or "", match.group(3) or ""
        if name in _ROLE_STEP2:
            return Place(2, index, name, rest)
        return Place(1, index, "role-name", rest if name in ("", "name") else f".{name}{rest}")
    top, _, rest = field.partition(".")
    if top in _STEP1_TOP:
        return Place(1, None, top, rest)
    if top in _STEP3_TOP:
        return Place(3, None, top, rest)
    if top == "record":
        return Place(3, None, f"record-{rest.split('.')[0]}" if rest else "record-runId")
    return Place(4, None, "preview", field)


def finding_line(finding: Finding, place: Place) -> str:
    """The text beside a field: the message, prefixed by the sub-field it concerns (`FOO: ...`)."""
    detail = place.detail.lstrip(".")
    if detail.startswith("[") and "]" in detail:
        number, _, rest = detail[1:].partition("]")
        prefix = f"line {int(number) + 1}{(' ' + rest.lstrip('.')) if rest else ''}" if number.isdigit() else detail
    else:
        prefix = detail
    return f"{prefix}: {finding.message}" if prefix else finding.message


class FormError(ValueError):
    """A typed form value that cannot become a draft value; the message is shown beside the field."""


def _tokens(text: str) -> list[str]:
    return [part for part in re.split(r"[\s,]+", text.strip()) if part]


def _shown(word: str) -> str:
    """A typed word as quoted in a message: at most 40 characters."""
    return word if len(word) <= 40 else word[:40] + "…"


def is_count(text: str) -> bool:
    """ASCII digits only (`²` is a digit to str.isdigit but not to int), at most 9 of them."""
    return text.isascii() and text.isdigit() and len(text) <= 9


def parse_selector(text: str) -> dict[str, str]:
    """`key=value key2=value2` (spaces or commas between pairs) → selector. A word without `=` after a pair is
    another value of that key, and a key given twice collects both values, so `host=a,b` becomes the multi-value
    `a,b` that the validator refuses (W5) instead of silently dropping one."""
    selector: dict[str, str] = {}
    last = None
    for word in _tokens(text):
        if "=" in word:
            key, _, value = word.partition("=")
            key, value = key.strip(), value.strip()
            if not key:
                raise FormError(f"'{_shown(word)}' has no label key before =")
            selector[key] = f"{selector[key]},{value}" if key in selector else value
            last = key
        elif last is not None:
            selector[last] = f"{selector[last]},{word}"
        else:
            raise FormError(f"'{_shown(word)}' is not key=value")
    return selector


def format_selector(selector: Mapping[str, str]) -> str:
    return " ".join(f"{key}={value}" for key, value in selector.items())


def parse_devices(text: str) -> dict[str, int]:
    """`rlinf.io/franka=1 rlinf.io/cam=2` → {name: count}."""
    devices: dict[str, int] = {}
    for word in _tokens(text):
        name, sep, amount = word.partition("=")
        if not sep or not name:
            raise FormError(f"'{_shown(word)}' is not name=count")
        if not is_count(amount.strip()):
            raise FormError(f"{_shown(name)}: the count must be a whole number ≥ 0")
        devices[name.strip()] = int(amount)
    return devices


def format_devices(devices: Mapping[str, int]) -> str:
    return " ".join(f"{name}={amount}" for name, amount in devices.items())


def parse_count(text: str, what: str = "value") -> int:
    text = text.strip()
    if not text:
        return 0
    if not is_count(text):
        raise FormError(f"{what} must be a whole number ≥ 0")
    return int(text)


def parse_env(text: str) -> dict[str, str]:
    """One `NAME=value` per line (blank lines and `#` comments skipped); the value keeps its spaces."""
    env: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        name, sep, value = stripped.partition("=")
        if not sep or not name.strip():
            raise FormError(f"line {number}: write NAME=value")
        if name.strip() in env:
            raise FormError(f"line {number}: {_shown(name.strip())} is set twice")
        env[name.strip()] = value
    return env


def format_env(env: Mapping[str, str]) -> str:
    return "\n".join(f"{name}={value}" for name, value in env.items())


EMPTY = '""'
_EMPTY_WORD = {EMPTY: "", "''": ""}


def parse_mounts(text: str) -> tuple[Mount, ...]:
    """One mount per line: `host <host dir> <target>` or `storage <storage class> <target>` (`""` = empty)."""
    mounts = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        kind = words[0].lower()
        if kind not in ("host", "storage") or len(words) != 3:
            raise FormError(f"line {number}: write `host <host dir> <target>` or `storage <class> <target>`")
        words = [_EMPTY_WORD.get(word, word) for word in words]
        if kind == "host":
            mounts.append(Mount(type="host", source=words[1], target=words[2]))
        else:
            mounts.append(Mount(type="storage", storage_class=words[1], target=words[2]))
    return tuple(mounts)


def format_mounts(mounts: Iterable[Mount]) -> str:
    lines = []
    for mount in mounts:
        middle = mount.source if mount.type == "host" else mount.storage_class
        lines.append(f"{mount.type or 'host'} {middle or EMPTY} {mount.target or EMPTY}")
    return "\n".join(lines)


def clusters_of(nodes: Iterable[Node]) -> list[str]:
    return sorted({node.cluster for node in nodes if node.cluster})


def label_choices(nodes: Iterable[Node], cluster: str) -> list[tuple[str, str, int]]:
    """(key, value, Nodes of `cluster` with it) for every label of the cluster's Nodes, except the Node-CR-only
    `rlark.io/cluster-id` (never schedulable), hostnames first."""
    counts: dict[tuple[str, str], int] = {}
    for node in nodes:
        if node.cluster != cluster:
            continue
        for key, value in node.labels.items():
            if key == keys.CLUSTER_ID_LABEL or not isinstance(value, str):
                continue
            counts[(key, value)] = counts.get((key, value), 0) + 1
    return sorted(((k, v, n) for (k, v), n in counts.items()),
                  key=lambda item: (item[0] != keys.HOSTNAME_LABEL, item[0], item[1]))


def gpu_maximum(matched: Iterable[Node]) -> int | None:
    """The most GPUs one worker may ask for: the smallest allocatable among matched Nodes that report GPUs
    (every matched Node gets one Pod); None when no matched Node reports any."""
    amounts = [node.allocatable(keys.GPU_RESOURCE) for node in matched]
    known = [int(a) for a in amounts if a is not None]
    return min(known) if known else None


def device_summary(nodes: Iterable[Node], cluster: str) -> str:
    """`rlinf.io/franka (edge-b1: 1)` for every rlinf.io/* resource the cluster's Nodes report."""
    found: dict[str, list[str]] = {}
    for node in nodes:
        if node.cluster != cluster:
            continue
        for name in node.device_resources:
            amount = node.allocatable(name)
            found.setdefault(name, []).append(f"{node.name}: {amount:g}" if amount is not None else node.name)
    return "; ".join(f"{name} ({', '.join(where)})" for name, where in sorted(found.items()))


def node_devices(node: Node) -> str:
    parts = []
    for name in node.device_resources:
        amount = node.allocatable(name)
        parts.append(f"{name}={amount:g}" if amount is not None else name)
    return " ".join(parts)


def storage_class_map(gateway_data: object) -> dict[str, list[str]]:
    """cluster namespace → storage class names, from the gateway's `storage/storageclass` answer."""
    result: dict[str, list[str]] = {}
    data = gateway_data.get("data") if isinstance(gateway_data, Mapping) else None
    if not isinstance(data, Mapping):
        return result
    for name, entry in data.items():
        clusters = entry.get("clusters") if isinstance(entry, Mapping) else None
        for cluster in clusters if isinstance(clusters, list) else []:
            result.setdefault(str(cluster), []).append(str(name))
    return {cluster: sorted(names) for cluster, names in result.items()}


def ssh_key_choices(gateway_data: object) -> list[tuple[str, str]]:
    """(label, public key) per entry of the gateway's `ssh-user-keys` list."""
    choices = []
    for entry in gateway_data if isinstance(gateway_data, list) else []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("public_key"), str):
            continue
        key = entry["public_key"].strip()
        parts = key.split()
        short = f"{parts[0]} …{parts[1][-8:]}" if len(parts) > 1 else key[:20]
        comment = " ".join(parts[2:])
        choices.append((f"{entry.get('user', '?')}: {short} {comment}".rstrip(), key))
    return choices
