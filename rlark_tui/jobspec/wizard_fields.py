"""The create-job wizard's field table: one row per form field (label, step, kind, how it reads and writes the
draft), the one handler every change goes through, the text forms (selectors, devices, env, mounts) and the
places of finding paths.

Pure (no Textual, no I/O). Adding a field is one row in FIELDS; every rule itself lives in rlark_tui.jobspec.validate.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from rlark_tui.jobspec.draft import PLATFORM_ROLES, JobDraft, Mount, RoleDraft
from rlark_tui.jobspec.findings import Finding
from rlark_tui.model import keys
from rlark_tui.model.objects import Node
from rlark_tui.model.placement import (
    COMPUTE,
    DEVICE,
    GPU,
    Hardware,
    NodeChanges,
    NodeSet,
    NodeSlots,
    dict_of,
    each_item,
    hardware_choices,
    hardware_named,
    node_clusters,
    once_per_node_set,
    updated_per_node_set,
)
from rlark_tui.text.parse import ascii_int
from rlark_tui.text.sinks import cut

STEP_NAMES = ("Roles and resources", "Worker config", "Common config", "YAML preview and submit")
JOB_TYPES = (("RL", "rl"), ("Data collection", "data-collection"), ("Evaluation", "evaluation"),
             ("Custom", "custom"))
PRESET_ROLES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "rl": ("Actor", "Rollout", "Environment"),
    "data-collection": ("Environment",),
    "evaluation": ("Rollout", "Environment"),
    "custom": (),
})
"""W4 presets: the initial roles per job type (Custom starts with none)."""
DEBUGGABLE_CHOICES = (("off", False), ("on: SYS_PTRACE and Ray profiling", True))
DEBUGGABLE_HELP = (f"Debuggable (step 3, off by default): on, every container gets "
                   f"securityContext.capabilities.add [{keys.PTRACE_CAPABILITY}] so py-spy in the Pod can read each "
                   f"rank's stack, and the Header role gets {keys.PROFILING_ENV}=1 so Ray's dashboard takes them "
                   "itself; `rlark stacks` and S on a stalled Job then show where every rank is. ptrace lets a "
                   "process read other processes' memory in its container: leave it off unless you need stacks.")

class FormError(ValueError):
    """A typed form value that cannot become a draft value; the message is shown beside the field."""


def _tokens(text: str) -> list[str]:
    return [part for part in re.split(r"[\s,]+", text.strip()) if part]


def _shown(word: str) -> str:
    """A typed word as quoted in a message: at most 40 characters."""
    return word if len(word) <= 40 else word[:40] + "…"


def is_count(text: str) -> bool:
    """ASCII digits only (`²` is a digit to str.isdigit but not to int), at most 9 of them."""
    return ascii_int(text) is not None and len(text) <= 9


def parse_selector(text: str) -> dict[str, str]:
    """`key=value key2=value2` (spaces or commas between pairs) → selector. A word without `=` after a pair is
    another value of that key, and a key given twice collects both values, so `host=a,b` becomes the multi-value
    `a,b` that the validator refuses (W5) instead of silently dropping one. Each key's values are joined once, at
    the end: joined at each word, a 1 MB selector pasted into the field was 12 s of the UI thread."""
    values: dict[str, list[str]] = {}
    last: list[str] | None = None
    for word in _tokens(text):
        if "=" in word:
            key, _, value = word.partition("=")
            key, value = key.strip(), value.strip()
            if not key:
                raise FormError(f"'{_shown(word)}' has no label key before =")
            last = values.setdefault(key, [])
            last.append(value)
        elif last is not None:
            last.append(word)
        else:
            raise FormError(f"'{_shown(word)}' is not key=value")
    return {key: ",".join(parts) for key, parts in values.items()}


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


def parse_names(text: str) -> tuple[str, ...]:
    """Node names separated by spaces or commas, each once, in the order typed."""
    return tuple(dict.fromkeys(_tokens(text)))


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
_EMPTY_WORD = MappingProxyType({EMPTY: "", "''": ""})


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



# ---- live facts ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WizardFacts:
    """The live facts the wizard checks and offers: Nodes, existing Job names and Domains from the snapshot
    (None: not loaded yet), and from the gateway the storage classes per cluster (None: unknown) and the
    registered SSH keys as (label, public key); `gateway_note` says why gateway facts are missing."""

    nodes: tuple[Node, ...] = ()
    jobs: tuple[str, ...] | None = None
    domains: tuple[str, ...] | None = None
    storage_classes: Mapping[str, list[str]] | None = None
    ssh_keys: tuple[tuple[str, str], ...] = ()
    gateway_note: str = ""


LabelCounts = tuple[Mapping[tuple[str, str], int], tuple[tuple[str, str, int], ...]]
"""(key, value) → how many Nodes have the label, and label_choices' tuple of them."""


def _label_order(choice: tuple[str, str, int]) -> tuple[bool, str, str]:
    return choice[0] != keys.HOSTNAME_LABEL, choice[0], choice[1]


def _choice_labels(node: Node) -> Iterable[tuple[str, str]]:
    return ((key, value) for key, value in node.labels.items()
            if key != keys.CLUSTER_ID_LABEL and isinstance(value, str))


def _update_label_counts(nodes: NodeSet, earlier: LabelCounts, changes: NodeChanges, cluster: str) -> LabelCounts:
    steps: dict[tuple[str, str], int] = {}
    for step, changed in ((-1, changes.gone), (1, changes.new)):
        for node in changed:
            if node.cluster == cluster:
                for label in _choice_labels(node):
                    steps[label] = steps.get(label, 0) + step
    counts, choices = dict_of(earlier[0]), list(earlier[1])
    for (key, value), step in steps.items():
        if not step:
            continue
        before = counts.get((key, value), 0)
        where = bisect.bisect_left(choices, _label_order((key, value, 0)), key=_label_order)
        if before:
            del choices[where]
        if before + step:
            counts[(key, value)] = before + step
            choices.insert(where, (key, value, before + step))
        else:
            del counts[(key, value)]
    return MappingProxyType(counts), tuple(choices)


@updated_per_node_set(_update_label_counts)
def _label_counts(nodes: Iterable[Node], cluster: str) -> LabelCounts:
    counts: dict[tuple[str, str], int] = {}
    for node in nodes:
        if node.cluster == cluster:
            for label in _choice_labels(node):
                counts[label] = counts.get(label, 0) + 1
    return MappingProxyType(counts), tuple(sorted(((k, v, n) for (k, v), n in counts.items()), key=_label_order))


def label_choices(nodes: Iterable[Node], cluster: str) -> tuple[tuple[str, str, int], ...]:
    """(key, value, Nodes of `cluster` with it) for every label of the cluster's Nodes, except the Node-CR-only
    `rlark.io/cluster-id` (never schedulable), hostnames first."""
    return _label_counts(nodes, cluster)[1]


def gpu_maximum(matched: Iterable[Node]) -> int | None:
    """The most GPUs one worker may ask for: the smallest allocatable among matched Nodes that report GPUs
    (every matched Node gets one Pod); None when no matched Node reports any."""
    amounts = [node.allocatable(keys.GPU_RESOURCE) for node in matched]
    known = [int(a) for a in amounts if a is not None]
    return min(known) if known else None


Devices = Mapping[str, tuple[tuple[Node, str], ...]]
"""Each rlinf.io/* resource → (Node, `name: amount`) of the Nodes that report it, in the NodeSet's order."""


def _device_entries(node: Node) -> Iterable[tuple[str, tuple[Node, str]]]:
    for name in node.device_resources:
        amount = node.allocatable(name)
        yield name, (node, f"{node.name}: {amount:g}" if amount is not None else node.name)


def _update_devices(nodes: NodeSet, earlier: Devices, changes: NodeChanges, cluster: str) -> Devices:
    gone = {id(node) for node in changes.gone}
    touched = {name for node in changes.gone if node.cluster == cluster for name in node.device_resources}
    new: dict[str, list[tuple[Node, str]]] = {}
    for node in changes.new:
        if node.cluster == cluster:
            for name, entry in _device_entries(node):
                new.setdefault(name, []).append(entry)
    devices = dict_of(earlier)
    for name in touched | new.keys():
        entries = [entry for entry in devices.get(name, ()) if id(entry[0]) not in gone]
        for entry in new.get(name, ()):
            bisect.insort(entries, entry, key=lambda each: nodes.place(each[0]))
        if entries:
            devices[name] = tuple(entries)
        else:
            devices.pop(name, None)
    return MappingProxyType(devices)


@updated_per_node_set(_update_devices)
def _devices(nodes: Iterable[Node], cluster: str) -> Devices:
    found: dict[str, list[tuple[Node, str]]] = {}
    for node in nodes:
        if node.cluster == cluster:
            for name, entry in _device_entries(node):
                found.setdefault(name, []).append(entry)
    return MappingProxyType({name: tuple(entries) for name, entries in found.items()})


@once_per_node_set
def device_summary(nodes: Iterable[Node], cluster: str) -> str:
    """`rlinf.io/franka (edge-b1: 1)` for every rlinf.io/* resource the cluster's Nodes report."""
    return "; ".join(f"{name} ({', '.join(text for _, text in entries)})"
                     for name, entries in sorted(_devices(nodes, cluster).items()))


def node_devices(node: Node) -> str:
    parts = []
    for name in node.device_resources:
        amount = node.allocatable(name)
        parts.append(f"{name}={amount:g}" if amount is not None else name)
    return " ".join(parts)


def _amount(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def slot_word(hardware: Hardware | NodeSlots, amount: float = 2) -> str:
    word = {GPU: "GPU", DEVICE: "device", COMPUTE: "slot"}[hardware.kind]
    return word if amount == 1 else word + "s"


def hardware_label(hardware: Hardware) -> str:
    """`NVIDIA H100 80GB HBM3  21/24 GPUs free · Nodes 3/3`: the slots free/total (free on schedulable Nodes) and
    the Nodes available/total, as the console's picker lists a choice."""
    nodes = f"Nodes {hardware.nodes_available}/{len(hardware.members)}"
    if hardware.kind == COMPUTE:
        return f"{hardware.model}  {nodes}"
    return (f"{hardware.model}  {_amount(hardware.free)}/{_amount(hardware.total)} {slot_word(hardware)} free · "
            f"{nodes}")


def role_hardware(facts: WizardFacts, role: RoleDraft | None) -> Hardware | None:
    if role is None or not role.hardware:
        return None
    return hardware_named(facts.nodes, role.cluster, role.hardware)


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


# ---- the field table ---------------------------------------------------------------------------------------
Choices = list[tuple[str, Any]]
Value = Any
"""What a widget holds: the text of an input or script box, the chosen value of a select (None when blank)."""


@dataclass(frozen=True)
class Field:
    """One form field. `key` names its widget (`w-<key>`), its message area (`m-<key>`) and the finding path it
    shows (`roles[i].<key>` for a role field, `record.<name>` for `record-<name>`, else `<key>`).

    kind: `input` (one line), `count` (digits), `script` (a tall text box), `lines` (a short text box) or
    `select`. `read` gives the widget value from the draft (and the role shown in step 2); `write` returns the
    new draft for a widget value (FormError: the value cannot become one); a field with `into` writes nothing
    itself and fills that field's widget with `write`'s text (a picker). `choices` lists a select's options."""

    key: str
    label: str
    step: int
    kind: str = "input"
    read: Callable[[JobDraft, RoleDraft | None], Value] = lambda draft, role: ""
    write: Callable[[JobDraft, int, Value], Any] | None = None
    placeholder: str = ""
    role: bool = False
    choices: Callable[[WizardFacts, JobDraft, RoleDraft | None], Choices] | None = None
    clearable: bool = False
    """A select whose blank choice clears the draft value (otherwise a blank select changes nothing)."""
    into: str = ""
    heading: str = ""
    """A heading shown above the field (the first field of a group)."""

    def path(self, role_index: int) -> str:
        """The finding path a parse problem of this field is reported under."""
        if self.role:
            return f"roles[{role_index}].{self.key}"
        if self.key.startswith("record-"):
            return "record." + self.key.removeprefix("record-")
        return self.key


def edit_role(draft: JobDraft, index: int, **changes) -> JobDraft:
    roles = list(draft.roles)
    roles[index] = replace(roles[index], **changes)
    return replace(draft, roles=tuple(roles))


def _top(attr: str, strip: bool = False):
    """read/write of a top-level draft attribute (text)."""
    return {"read": lambda draft, role: getattr(draft, attr),
            "write": lambda draft, index, value: replace(draft, **{attr: value.strip() if strip else value})}


def _of_role(attr: str, parse: Callable[[Any], Any] = lambda value: value, show: Callable[[Any], Any] = str):
    """read/write of an attribute of the role shown in step 2, through a parser and a formatter."""
    return {"role": True, "read": lambda draft, role: None if role is None else show(getattr(role, attr)),
            "write": lambda draft, index, value: edit_role(draft, index, **{attr: parse(value)})}


def _record(name: str, label: str, placeholder: str = "", count: bool = False, heading: str = "") -> Field:
    """A launch-record field (`record.<name>`): text, or a whole number ≥ 1 when `count`."""

    def write(draft: JobDraft, index: int, value: str) -> JobDraft:
        record = dict(draft.record)
        text = value.strip()
        if not text:
            record.pop(name, None)
        elif not count:
            record[name] = text
        elif is_count(text) and int(text) >= 1:
            record[name] = int(text)
        else:
            raise FormError("must be a whole number ≥ 1")
        return replace(draft, record=record)

    return Field(f"record-{name}", label, 3, "count" if count else "input",
                 read=lambda draft, role: "" if draft.record.get(name) is None else str(draft.record[name]),
                 write=write, placeholder=placeholder, heading=heading)


def role_choices(facts: WizardFacts, draft: JobDraft, role: RoleDraft | None) -> Choices:
    return [(r.name or f"(role {i + 1})", i) for i, r in enumerate(draft.roles)]


def _set_header(draft: JobDraft, index: int, value: int) -> JobDraft:
    return replace(draft, header=draft.roles[value].name) if 0 <= value < len(draft.roles) else draft


def _cluster_choices(facts: WizardFacts, draft: JobDraft, role: RoleDraft | None) -> Choices:
    clusters = node_clusters(facts.nodes)
    wanted: Choices = [(c, c) for c in clusters]
    if role is not None and role.cluster and role.cluster not in clusters:
        wanted.append((f"{role.cluster} (no Nodes)", role.cluster))
    return wanted


def _label_choices(facts: WizardFacts, draft: JobDraft, role: RoleDraft | None) -> Choices:
    return list(_label_options(facts.nodes, role.cluster)) if role is not None else []


@each_item(label_choices)
def _label_options(choice: tuple[str, str, int]) -> tuple[str, str]:
    key, value, count = choice
    return f"{key}={value}  ({count} Node{'s' if count != 1 else ''})", f"{key}={value}"


def _add_label(draft: JobDraft, index: int, value: str) -> str:
    key, _, label = value.partition("=")
    return format_selector({**draft.roles[index].selector, key: label})


def _hardware_choices(facts: WizardFacts, draft: JobDraft, role: RoleDraft | None) -> Choices:
    if role is None:
        return []
    wanted: Choices = list(_hardware_options(facts.nodes, role.cluster))
    if role.hardware and hardware_named(facts.nodes, role.cluster, role.hardware) is None:
        wanted.append((f"{role.hardware} (no such Nodes)", role.hardware))
    return wanted


@each_item(hardware_choices)
def _hardware_options(choice: Hardware) -> tuple[str, str]:
    return hardware_label(choice), choice.model


def _set_hardware(draft: JobDraft, index: int, value: str | None) -> JobDraft:
    """Placement on `value`: the selector gives way to it, picked Nodes stay only on the same hardware, and an
    automatic placement starts at 1 worker; blank returns the role to its node selector."""
    role = draft.roles[index]
    if not value:
        return edit_role(draft, index, hardware="", workers=0, nodes=())
    nodes = role.nodes if role.hardware == value else ()
    return edit_role(draft, index, hardware=value, selector={}, nodes=nodes,
                     workers=0 if nodes else (role.workers or 1))


def _read_workers(draft: JobDraft, role: RoleDraft | None) -> str | None:
    if role is None:
        return None
    if role.nodes:
        return str(len(role.nodes))
    return str(role.workers) if role.workers else ""


def _set_workers(draft: JobDraft, index: int, value: str) -> JobDraft:
    role = draft.roles[index]
    count = parse_count(value, "workers")
    if role.nodes:
        if count not in (0, len(role.nodes)):
            raise FormError(f"follows the picked Nodes ({len(role.nodes)}); clear Nodes to choose a count")
        return draft
    return edit_role(draft, index, workers=count)


def _set_nodes(draft: JobDraft, index: int, value: str) -> JobDraft:
    nodes = parse_names(value)
    role = draft.roles[index]
    return edit_role(draft, index, nodes=nodes, selector={} if nodes else role.selector,
                     workers=0 if nodes else (role.workers or (1 if role.hardware else 0)))


def _node_choices(facts: WizardFacts, draft: JobDraft, role: RoleDraft | None) -> Choices:
    """The schedulable Nodes of the role's hardware not picked yet, with their free slots."""
    if role is None or role_hardware(facts, role) is None:
        return []
    picked = set(role.nodes)
    return [option for option in _node_options(facts.nodes, role.cluster, role.hardware)
            if option is not None and option[1] not in picked]


def _members(nodes: Iterable[Node], cluster: str, model: str) -> tuple[NodeSlots, ...]:
    hardware = hardware_named(nodes, cluster, model)
    return hardware.members if hardware is not None else ()


@each_item(_members)
def _node_options(member: NodeSlots) -> tuple[str, str] | None:
    """(label, name) of a schedulable Node of a hardware choice, with its free slots (None: not schedulable)."""
    if not member.schedulable:
        return None
    return (f"{member.node.name}  {_amount(member.free)}/{_amount(member.total)} {slot_word(member)} free",
            member.node.name)


def _pick_node(draft: JobDraft, index: int, value: str) -> str:
    return " ".join((*draft.roles[index].nodes, value))


def _domain_choices(facts: WizardFacts, draft: JobDraft, role: RoleDraft | None) -> Choices:
    domains = sorted(facts.domains or ())
    options: Choices = [(d, d) for d in domains]
    if draft.domain and draft.domain not in domains:
        options.append((f"{draft.domain} (unknown)", draft.domain))
    return options


FIELDS: tuple[Field, ...] = (
    Field("name", "Job name", 1, placeholder="lowercase letters, digits, '-'", **_top("name")),
    Field("displayName", "Display name", 1, placeholder="optional", **_top("display_name")),
    Field("type", "Job type", 1, "select", read=lambda draft, role: draft.type or None,
          write=lambda draft, index, value: apply_type(draft, value), choices=lambda *_: list(JOB_TYPES)),
    Field("header", "Header role", 1, "select", read=lambda draft, role: draft.header_index(), write=_set_header,
          placeholder="choose the Header role", choices=role_choices),
    Field("role-pick", "Role", 2, "select", read=lambda draft, role: None, placeholder="no roles yet",
          choices=role_choices),
    Field("role", "Platform role", 2, "select", placeholder="from the role name", clearable=True,
          choices=lambda *_: [(r, r) for r in PLATFORM_ROLES],
          **_of_role("role", lambda value: value or "", lambda value: value if value in PLATFORM_ROLES else None)),
    Field("cluster", "Cluster", 2, "select", placeholder="choose the cluster", choices=_cluster_choices,
          clearable=True, **_of_role("cluster", lambda value: value or "", lambda value: value or None)),
    Field("hardware", "Hardware", 2, "select", placeholder="(by node selector)", choices=_hardware_choices,
          clearable=True, role=True, read=lambda draft, role: None if role is None else role.hardware or None,
          write=_set_hardware, heading="Placement: hardware (automatic or picked Nodes), or a node selector"),
    Field("workers", "Workers", 2, "count", role=True, read=_read_workers, write=_set_workers),
    Field("node-pick", "Pick a Node", 2, "select", placeholder="pick Nodes of this hardware (one worker each)",
          choices=_node_choices, into="nodes", write=_pick_node, role=True, read=lambda draft, role: None),
    Field("nodes", "Nodes", 2, placeholder="picked Nodes (empty: placed automatically)", role=True,
          read=lambda draft, role: None if role is None else " ".join(role.nodes), write=_set_nodes),
    Field("selector", "Node selector", 2, placeholder="key=value key2=value2 (one value per key)",
          **_of_role("selector", parse_selector, format_selector)),
    Field("label-pick", "Add a label", 2, "select", placeholder="pick a label of this cluster's Nodes",
          choices=_label_choices, into="selector", write=_add_label, role=True, read=lambda draft, role: None),
    Field("gpu", "GPU per worker", 2, "count", **_of_role("gpu", lambda value: parse_count(value, "GPU"))),
    Field("devices", "Devices", 2, placeholder="rlinf.io/<device>=<count>",
          **_of_role("devices", parse_devices, format_devices)),
    Field("image", "Image", 2, placeholder="registry/name@sha256:<digest>", **_of_role("image")),
    Field("prepareScript", "Prepare script", 2, "script", placeholder="runs on every worker before Ray starts "
          "(f4: $EDITOR)", **_of_role("prepare_script")),
    Field("env", "Env", 2, "lines", placeholder="NAME=value, one per line", **_of_role("env", parse_env, format_env)),
    Field("mounts", "Mounts", 2, "lines", placeholder="host <host dir> <target>  |  storage <class> <target>",
          **_of_role("mounts", parse_mounts, format_mounts)),
    Field("cpu", "CPU request", 2, placeholder="optional, e.g. 16 or 500m",
          **_of_role("cpu", lambda value: value.strip())),
    Field("memory", "Memory request", 2, placeholder="optional, e.g. 64Gi",
          **_of_role("memory", lambda value: value.strip())),
    Field("header3", "Header role", 3, "select", read=lambda draft, role: draft.header_index(), write=_set_header,
          placeholder="choose the Header role", choices=role_choices),
    Field("domain", "Network domain", 3, "select", read=lambda draft, role: draft.domain or None,
          write=lambda draft, index, value: replace(draft, domain=value or ""), placeholder="(no domain)",
          choices=_domain_choices, clearable=True),
    Field("ssh-pick", "Registered key", 3, "select", placeholder="pick a key registered on the gateway",
          into="sshPublicKey",
          read=lambda draft, role: None, write=lambda draft, index, value: value,
          choices=lambda facts, draft, role: list(facts.ssh_keys)),
    Field("sshPublicKey", "SSH public key", 3, placeholder="optional: ssh-ed25519 AAAA... user@host",
          **_top("ssh_public_key")),
    Field("runScript", "Run script", 3, "script", placeholder="required: runs on the Header role after the Ray "
          "check (f4)", **_top("run_script")),
    Field("tensorboardDir", "TensorBoard dir", 3, placeholder="optional, inside a mount", **_top("tensorboard_dir")),
    _record("runId", "Run ID", "e.g. ppo-7",
            heading="Launch record (optional; kept on the Job for the run check)"),
    _record("codeRef", "Code ref", "full commit SHA of the code the image runs"),
    _record("configRef", "Config ref", "config path or checksum"),
    _record("expectedNumNodes", "Expected nodes", "cluster.num_nodes: Ray nodes RLinf should see", count=True),
    _record("progressPattern", "Progress regex", r"the agreed progress signal, e.g. Global Step:\s*(\d+)/(\d+)"),
    _record("startupMarker", "Startup marker", "regex the run script prints once the workload has started"),
    _record("stopCondition", "Stop condition", "when the run is to be stopped, e.g. after global step 1000 or 12 h"),
    _record("maxWaitSeconds", "Max wait (s)", "seconds the run check waits", count=True),
    _record("outputPath", "Output path", "checkpoint/output prefix on a storage mount"),
    Field("debuggable", "Debuggable", 3, "select", read=lambda draft, role: draft.debuggable,
          write=lambda draft, index, value: replace(draft, debuggable=bool(value)),
          choices=lambda *_: list(DEBUGGABLE_CHOICES), heading="Debugging (stacks of a hung run)"),
)
BY_KEY: Mapping[str, Field] = MappingProxyType({f.key: f for f in FIELDS})
REFILLS: Mapping[str, tuple[str, ...]] = MappingProxyType({"hardware": ("selector", "workers", "nodes"),
                                                           "nodes": ("selector", "workers")})
"""Fields whose change rewrites other fields of the role: the widgets to show again from the draft."""
PLACEMENT_ROWS = ("workers", "node-pick", "nodes")
"""Step 2's rows shown only for a role placed by hardware."""
SCRIPT_KEYS = tuple(f.key for f in FIELDS if f.kind in ("script", "lines"))
"""The text boxes f4 opens in $EDITOR."""


def step_fields(step: int) -> tuple[Field, ...]:
    return tuple(f for f in FIELDS if f.step == step)


def choices_of(field: Field, facts: WizardFacts, draft: JobDraft, role_index: int) -> Choices:
    return field.choices(facts, draft, role_at(draft, role_index)) if field.choices else []


def role_at(draft: JobDraft, index: int) -> RoleDraft | None:
    return draft.roles[index] if 0 <= index < len(draft.roles) else None


@dataclass(frozen=True)
class Change:
    """What one widget change does: the new draft and the parse problem of `path` ("" when it parsed), or,
    for a picker, the text to put into the widget of field `fill`, or the one line that says why it put none
    (`left_out`: the text is longer than that widget holds)."""

    draft: JobDraft
    path: str = ""
    problem: str = ""
    fill: str = ""
    text: str = ""
    left_out: str = ""


def apply(field: Field, draft: JobDraft, role_index: int, value: Value, facts: WizardFacts) -> Change:
    """The one handler: a widget of `field` now holds `value` (`role_index`: the role step 2 shows)."""
    role = role_at(draft, role_index)
    if field.write is None or (field.role and role is None):
        return Change(draft)
    if field.kind == "select" and value is None:
        current = field.read(draft, role)
        if not field.clearable or current is None or current not in [v for _, v in choices_of(
                field, facts, draft, role_index)]:
            return Change(draft)
    if field.into:
        return _fill(field, draft, field.write(draft, role_index, value)) if value is not None else Change(draft)
    path = field.path(role_index)
    try:
        return Change(field.write(draft, role_index, value), path)
    except FormError as exc:
        return Change(draft, path, str(exc))


def _fill(field: Field, draft: JobDraft, text: str) -> Change:
    """A picker's `text` (with its choice: a Node's name, a label, a registered key, cluster or gateway text) put
    into the field it fills, within what that field's widget holds, as every draft entering the form is (`held`)."""
    into = BY_KEY[field.into]
    if len(text) > bound(into):
        return Change(draft, left_out=f"{field.label}: {into.label.lower()} would be {len(text):,} characters, "
                                      f"{HOLD}: not picked")
    return Change(draft, fill=field.into, text=text)


def apply_type(draft: JobDraft, draft_type: str | None) -> JobDraft:
    """W4: a type replaces the roles by its presets (a role of the same task name keeps its settings)."""
    if draft_type is None or draft_type == draft.type or draft_type not in PRESET_ROLES:
        return draft
    existing = {role.task_name: role for role in draft.roles}
    roles = tuple(existing.get(RoleDraft(name=n).task_name, RoleDraft(name=n)) for n in PRESET_ROLES[draft_type])
    head = RoleDraft(name=draft.header).task_name
    header = draft.header if any(r.task_name == head for r in roles) else ""
    return replace(draft, type=draft_type, roles=roles, header=header)


def rename_role(draft: JobDraft, index: int, name: str) -> JobDraft:
    """Role `index` is now called `name` (the Header follows when it was this role)."""
    if not 0 <= index < len(draft.roles):
        return draft
    renamed = edit_role(draft, index, name=name)
    return replace(renamed, header=name) if draft.header_index() == index else renamed


def add_role(draft: JobDraft) -> JobDraft:
    """A new role `New role` (numbered when the name is taken) at the end."""
    taken = {role.task_name for role in draft.roles}
    number, name = 1, "New role"
    while RoleDraft(name=name).task_name in taken:
        number += 1
        name = f"New role {number}"
    return replace(draft, roles=draft.roles + (RoleDraft(name=name),))


def remove_role(draft: JobDraft, index: int) -> JobDraft:
    if not 0 <= index < len(draft.roles):
        return draft
    header = "" if draft.header_index() == index else draft.header
    return replace(draft, roles=draft.roles[:index] + draft.roles[index + 1:], header=header)


MAX_LINE_CHARS = 16_384
"""The most characters a one-line field of the wizard holds (an SSH public key file's bound, as `sshkeys add`
reads it): Textual's input measures its whole value at each change and each frame, and a Job author's 1 MB
display name, image, role name, env value or selector made the clone of the Job hold the UI thread 28 s."""
MAX_BOX_CHARS = 65_536
"""The most characters a text box of the wizard holds (a script, a role's env): some 1,600 lines of 40."""
HOLD = f"longer than the wizard's fields hold ({MAX_LINE_CHARS:,} characters a line, {MAX_BOX_CHARS:,} a text box)"


def bound(field: Field) -> int:
    """The most characters the widget of `field` holds."""
    return MAX_BOX_CHARS if field.kind in ("script", "lines") else MAX_LINE_CHARS


def held(draft: JobDraft, what: str = "the draft") -> tuple[JobDraft, str]:
    """`draft` as the form's widgets may hold it, and the one line that says what was left out ("" for none): a
    field whose text is longer than its widget holds (MAX_LINE_CHARS a line, MAX_BOX_CHARS a text box), a role's
    name too, is emptied by its own write before any widget shows it; of a role's env and selector, only the
    entries longer than a line. Every draft the wizard opens (an import, an autosave, the clone or edit of a Job)
    enters the form through it; a picker's fill is held to the same bound (`_fill`)."""
    left: list[str] = []
    for index, role in enumerate(draft.roles):
        for attr, label in (("env", "env"), ("selector", "node selector")):
            entries: Mapping[str, str] = getattr(role, attr)
            long = {key: len(key) + len(value) + 1 for key, value in entries.items()
                    if len(key) + len(value) >= MAX_LINE_CHARS}
            left += [f"role {index + 1}'s {label} {_shown(key)} ({chars:,} characters)" for key, chars in long.items()]
            if long:
                draft = edit_role(draft, index, **{attr: {k: v for k, v in entries.items() if k not in long}})
        if len(role.name) > MAX_LINE_CHARS:
            left.append(f"role {index + 1}'s name ({len(role.name):,} characters)")
            draft = rename_role(draft, index, "")
    for field in FIELDS:
        if field.write is None or field.into or field.kind == "select":
            continue
        for index in range(len(draft.roles)) if field.role else (0,):
            text = field.read(draft, role_at(draft, index))
            if isinstance(text, str) and len(text) > bound(field):
                where = f"role {index + 1}'s " if field.role else ""
                left.append(f"{where}{field.label.lower()} ({len(text):,} characters)")
                draft = field.write(draft, index, "")
    if not left:
        return draft, ""
    more = f" and {len(left) - 4:,} more" if len(left) > 4 else ""
    return draft, f"{what}: {', '.join(left[:4])}{more} left out, {HOLD}: set them again"


def task_label(role: RoleDraft) -> str:
    return f"task: {cut(role.task_name) or '?'} · {role.platform_role}"


# ---- where a finding shows ---------------------------------------------------------------------------------
_ROLE_PATH = re.compile(r"^roles\[(\d+)\](?:\.([A-Za-z]+)(.*))?$")


@dataclass(frozen=True)
class Place:
    """Where a finding's field lives in the wizard: step 1–4, the role it concerns (or None) and the widget key
    (`name`, `role-name`, `selector`, `record-runId`, ...); `detail` is the rest of the path (`.FOO`, `[1].target`)."""

    step: int
    role: int | None
    key: str
    detail: str = ""


def place_of(path: str) -> Place:
    """The wizard place of a finding path such as `roles[1].selector.kubernetes.io/hostname`."""
    match = _ROLE_PATH.match(path)
    if match:
        index, name, rest = int(match.group(1)), match.group(2) or "", match.group(3) or ""
        row = BY_KEY.get(name)
        if row is not None and row.role:
            return Place(row.step, index, name, rest)
        return Place(1, index, "role-name", rest if name in ("", "name") else f".{name}{rest}")
    top, _, rest = path.partition(".")
    if top == "roles":
        return Place(1, None, top, rest)
    if top == "record":
        return Place(3, None, f"record-{rest.split('.')[0]}" if rest else "record-runId")
    row = BY_KEY.get(top)
    if row is not None and not row.role and not row.into:
        return Place(row.step, None, top, rest)
    return Place(4, None, "preview", path)


def finding_line(finding: Finding, place: Place) -> str:
    """The text beside a field: the message, prefixed by the sub-field it concerns (`FOO: ...`)."""
    detail = place.detail.lstrip(".")
    if detail.startswith("[") and "]" in detail:
        number, _, rest = detail[1:].partition("]")
        line = ascii_int(number)
        prefix = f"line {line + 1}{(' ' + rest.lstrip('.')) if rest else ''}" if line is not None else detail
    else:
        prefix = detail
    return f"{prefix}: {finding.message}" if prefix else finding.message
