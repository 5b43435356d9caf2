"""JobDraft: the create-job wizard's state, also a YAML file a user can write by hand; load and dump.

Loading never raises on content: wrong types and unknown fields become Findings; only unusable input
(undecodable bytes, YAML syntax errors, a top level that is not a mapping) raises DraftInputError.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import yaml

from rlark_tui.errors import UsageError
from rlark_tui.jobspec.findings import Finding, error, field_path
from rlark_tui.model.naming import derive_task_name, platform_role
from rlark_tui.text.parse import YamlBound, load_yaml
from rlark_tui.text.sinks import yaml_escaped, yaml_quoted

DRAFT_TYPES = ("rl", "data-collection", "evaluation", "custom")
PLATFORM_ROLES = ("Actor", "Rollout", "Env")
MOUNT_TYPES = ("host", "storage")
RECORD_FIELDS = ("runId", "codeRef", "configRef", "dataVersion", "expectedNumNodes", "progressPattern",
                 "startupMarker", "stopCondition", "maxWaitSeconds", "outputPath", "buildRecord", "recorder", "notes", "placementMode",
                 "componentPlacement", "nodeGroups", "runtimeVersions")
_RECORD_INTS = ("expectedNumNodes", "maxWaitSeconds")
_RECORD_DATA = MappingProxyType({"componentPlacement": dict, "nodeGroups": list, "runtimeVersions": dict})
"""Record fields holding structured data, compared as-is with RLinf's resolved `cluster` config."""
PLACEMENT_MODES = ("collocated", "disaggregated", "hybrid")
_MAX_DATA_DEPTH = 8
MAX_DRAFT_BYTES = 4 * 1024 * 1024
MAX_ROLES = 64
"""The most roles the wizard takes (an RLinf Job has a few: actor, rollout, env): it lays out a row and a form per
role, and a draft of 500 roles from someone else (an import, the edit or clone of a Job of 500 tasks) held the UI
thread a minute while they mounted. Drafts as files (`rlark draft render`, `submit -f`) have no such bound."""
MAX_ROLE_ENTRIES = 512
"""The most env entries, mounts, selector labels, devices or picked Nodes of a role the wizard opens."""
MAX_COUNT = 2**31 - 1
"""Largest GPU/device count or record number accepted (an int32, as Kubernetes counts replicas)."""
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
if TYPE_CHECKING:
    _DUMPER_BASE = yaml.SafeDumper  # libyaml's CSafeDumper, where PyYAML has it, offers the same methods
else:
    _DUMPER_BASE = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class DraftInputError(UsageError):
    """The draft (or Node list) cannot be used at all; exit code 2."""


@dataclass(frozen=True)
class Mount:
    """A host directory (`source` on the Node) or object storage (`storage_class`) mounted at `target`."""

    type: str
    target: str
    source: str = ""
    storage_class: str = ""


@dataclass(frozen=True)
class RoleDraft:
    """One role = one entry of `spec.tasks` (W1); `cluster` filters Nodes and is never emitted (W5)."""

    name: str
    role: str = ""
    cluster: str = ""
    selector: Mapping[str, str] = field(default_factory=dict)
    gpu: int = 0
    devices: Mapping[str, int] = field(default_factory=dict)
    cpu: str = ""
    memory: str = ""
    image: str = ""
    prepare_script: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    hardware: str = ""
    """Placement by hardware, as the console's picker: a GPU or device model of the cluster's Nodes (`CPU` for
    general compute). Without `nodes` the placement is automatic: `workers` workers on the schedulable Nodes of
    that model with the per-worker GPUs (or devices) free."""
    workers: int = 0
    nodes: tuple[str, ...] = ()
    """Picked Nodes: one worker each (the worker count follows them)."""

    @property
    def placed(self) -> bool:
        """Whether the role is placed by hardware or picked Nodes (not by its `selector`)."""
        return bool(self.hardware or self.nodes)

    @property
    def task_name(self) -> str:
        """`spec.tasks[].name`, derived from the role name as the console does."""
        return derive_task_name(self.name)

    @property
    def platform_role(self) -> str:
        """TaskSpec `role`: the given one, else mapped from the role name."""
        return self.role or platform_role(self.name)


@dataclass(frozen=True)
class JobDraft:
    """Everything the wizard collects for one Job. Edit with `dataclasses.replace`."""

    name: str = ""
    display_name: str = ""
    type: str = ""
    """rl | data-collection | evaluation | custom; empty = whatever the roles make it."""
    header: str = ""
    roles: tuple[RoleDraft, ...] = ()
    domain: str = ""
    ssh_public_key: str = ""
    run_script: str = ""
    tensorboard_dir: str = ""
    debuggable: bool = False
    """Stacks can be taken: SYS_PTRACE on every container (py-spy) and Ray's profiling on the Header role."""
    record: Mapping[str, Any] = field(default_factory=dict)

    def header_index(self) -> int | None:
        """Index of the role `header` names (same derived task name), or None."""
        wanted = derive_task_name(self.header)
        if not wanted:
            return None
        for index, role in enumerate(self.roles):
            if role.task_name == wanted:
                return index
        return None


def place_role(draft: JobDraft, role: str = "", hardware: str = "", workers: int = 0,
               nodes: tuple[str, ...] = ()) -> JobDraft:
    """The draft with role `role` (by name, as `header` names one; "" = the only role) placed by hardware as the
    console's picker: on `hardware` (its selector gives way), with `workers` placed automatically or on the picked
    `nodes` (one worker each). What is not given stays as the draft has it; a new hardware without a count or
    Nodes starts at 1 worker. UsageError when no role, or not one role, is meant."""
    names = ", ".join(r.name for r in draft.roles) or "none"
    if role:
        index = JobDraft(header=role, roles=draft.roles).header_index()
        if index is None:
            raise UsageError(f"the draft has no role '{role}' (roles: {names})")
    elif len(draft.roles) == 1:
        index = 0
    else:
        raise UsageError(f"name the role to place with --role (roles: {names})")
    current = draft.roles[index]
    picked = nodes or (current.nodes if not workers else ())
    count = 0 if picked else (workers or current.workers or 1)
    placed = replace(current, hardware=hardware or current.hardware, selector={}, nodes=picked, workers=count)
    return replace(draft, roles=draft.roles[:index] + (placed,) + draft.roles[index + 1:])


TOP_FIELDS = MappingProxyType({
    "name": "name", "displayName": "display_name", "type": "type", "header": "header", "roles": "roles",
    "domain": "domain", "sshPublicKey": "ssh_public_key", "runScript": "run_script",
    "tensorboardDir": "tensorboard_dir", "debuggable": "debuggable", "record": "record",
})
ROLE_FIELDS = MappingProxyType({
    "name": "name", "role": "role", "cluster": "cluster", "selector": "selector", "gpu": "gpu",
    "devices": "devices", "cpu": "cpu", "memory": "memory", "image": "image",
    "prepareScript": "prepare_script", "env": "env", "mounts": "mounts", "hardware": "hardware",
    "workers": "workers", "nodes": "nodes",
})
_FIELD_HINTS = MappingProxyType({
    "replicas": "replicas are the number of Nodes the selector matches (W1), or `workers` (or the picked `nodes`) "
                "of a `hardware` placement",
    "head": "name the Header role with the top-level `header:` field",
    "nodeSelector": "use `selector`",
})
MOUNT_FIELDS = MappingProxyType({"type": "type", "target": "target", "source": "source", "storageClass": "storage_class"})


def _type_name(value: Any) -> str:
    if value is None:
        return "empty"
    return {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)


class _Reader:
    """Turns parsed YAML into draft values, collecting a Finding for every wrong or unknown field."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def fail(self, path: str, message: str) -> None:
        self.findings.append(error(path, message))

    def unknown_keys(self, data: Mapping, known: Mapping[str, str], path: str) -> None:
        for key in data:
            if key in known:
                continue
            where = field_path(path, key)
            hint = difflib.get_close_matches(str(key), list(known), n=1)
            if key in _FIELD_HINTS:
                suffix = f": {_FIELD_HINTS[key]}"
            elif hint:
                suffix = f" (did you mean '{hint[0]}'?)"
            else:
                suffix = f"; known fields: {', '.join(known)}"
            self.fail(where, f"unknown field{suffix}")

    def text(self, data: Mapping, key: str, path: str) -> str:
        value = data.get(key)
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in ("name", "header"):
            return _scalar_text(value)
        self.fail(path, f"must be text, not {_type_name(value)}")
        return ""

    def count(self, data: Mapping, key: str, path: str) -> int:
        value = data.get(key)
        if value is None:
            return 0
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be a whole number ≥ 0, not {_type_name(value)}")
            return 0
        if value < 0:
            self.fail(path, "must be a whole number ≥ 0")
            return 0
        if value > MAX_COUNT:
            self.fail(path, f"is too large (at most {MAX_COUNT})")
            return 0
        return value

    def flag(self, data: Mapping, key: str, path: str) -> bool:
        value = data.get(key)
        if value is None or isinstance(value, bool):
            return bool(value)
        self.fail(path, f"must be true or false, not {_type_name(value)}")
        return False

    def mapping(self, data: Mapping, key: str, path: str) -> Mapping:
        value = data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.fail(path, f"must be a mapping, not {_type_name(value)}")
            return {}
        return value

    def string_map(self, data: Mapping, key: str, path: str) -> dict[str, str]:
        result = {}
        for name, value in self.mapping(data, key, path).items():
            where = field_path(path, name)
            if not isinstance(name, str):
                self.fail(path, f"key {name!r} must be text")
            elif value is None or isinstance(value, (list, dict)) or not _is_scalar(value):
                self.fail(where, f"must be a single text value, not {_type_name(value)}")
            else:
                result[name] = _scalar_text(value)
        return result

    def selector(self, data: Mapping, path: str) -> dict[str, str]:
        value = data.get("selector")
        if isinstance(value, list):
            result = {}
            for index, item in enumerate(value):
                if not isinstance(item, str) or "=" not in item:
                    self.fail(f"{path}[{index}]", "must be `key=value`")
                    continue
                key, _, label = item.partition("=")
                result[key.strip()] = label.strip()
            return result
        return self.string_map(data, "selector", path)

    def role(self, data: Any, path: str) -> RoleDraft | None:
        if not isinstance(data, Mapping):
            self.fail(path, f"must be a mapping with at least `name`, not {_type_name(data)}")
            return None
        self.unknown_keys(data, ROLE_FIELDS, path)
        role = self.text(data, "role", f"{path}.role")
        devices = {}
        for name, amount in self.mapping(data, "devices", f"{path}.devices").items():
            devices[str(name)] = self.count({"v": amount}, "v", field_path(f"{path}.devices", name))
        mounts = []
        raw_mounts = data.get("mounts")
        if raw_mounts is not None and not isinstance(raw_mounts, list):
            self.fail(f"{path}.mounts", f"must be a list, not {_type_name(raw_mounts)}")
        for index, item in enumerate(raw_mounts if isinstance(raw_mounts, list) else []):
            mount = self.mount(item, f"{path}.mounts[{index}]")
            if mount is not None:
                mounts.append(mount)
        return RoleDraft(
            name=self.text(data, "name", f"{path}.name"),
            role=role,
            cluster=self.text(data, "cluster", f"{path}.cluster"),
            selector=self.selector(data, f"{path}.selector"),
            gpu=self.count(data, "gpu", f"{path}.gpu"),
            devices=devices,
            cpu=self.text(data, "cpu", f"{path}.cpu"),
            memory=self.text(data, "memory", f"{path}.memory"),
            image=self.text(data, "image", f"{path}.image"),
            prepare_script=self.text(data, "prepareScript", f"{path}.prepareScript"),
            env=self.string_map(data, "env", f"{path}.env"),
            mounts=tuple(mounts),
            hardware=self.text(data, "hardware", f"{path}.hardware"),
            workers=self.count(data, "workers", f"{path}.workers"),
            nodes=self.names(data, "nodes", f"{path}.nodes"),
        )

    def names(self, data: Mapping, key: str, path: str) -> tuple[str, ...]:
        """A list of names, or one text of names separated by commas or spaces."""
        value = data.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            return tuple(part for part in value.replace(",", " ").split() if part)
        if not isinstance(value, list):
            self.fail(path, f"must be a list of names, not {_type_name(value)}")
            return ()
        names = []
        for index, item in enumerate(value):
            if isinstance(item, str) and item.strip():
                names.append(item.strip())
            else:
                self.fail(f"{path}[{index}]", f"must be a Node name, not {_type_name(item)}")
        return tuple(names)

    def mount(self, data: Any, path: str) -> Mount | None:
        if not isinstance(data, Mapping):
            self.fail(path, f"must be a mapping {{type, target, source|storageClass}}, not {_type_name(data)}")
            return None
        self.unknown_keys(data, MOUNT_FIELDS, path)
        return Mount(type=self.text(data, "type", f"{path}.type"),
                     target=self.text(data, "target", f"{path}.target"),
                     source=self.text(data, "source", f"{path}.source"),
                     storage_class=self.text(data, "storageClass", f"{path}.storageClass"))

    def record(self, data: Mapping) -> dict[str, Any]:
        raw = self.mapping(data, "record", "record")
        known = {name: name for name in RECORD_FIELDS}
        self.unknown_keys(raw, known, "record")
        result: dict[str, Any] = {}
        for name in RECORD_FIELDS:
            if raw.get(name) is None:
                continue
            if name in _RECORD_DATA:
                value = raw[name]
                kind = _RECORD_DATA[name]
                if not isinstance(value, kind):
                    self.fail(f"record.{name}", f"must be {_type_name(kind())}, not {_type_name(value)}")
                elif not _plain_data(value, _MAX_DATA_DEPTH):
                    self.fail(f"record.{name}", "must hold only text, numbers, true/false, lists and mappings "
                                                f"with text keys (at most {_MAX_DATA_DEPTH} levels)")
                else:
                    result[name] = value
                continue
            if name in _RECORD_INTS:
                value = raw[name]
                if isinstance(value, bool) or not isinstance(value, int):
                    self.fail(f"record.{name}", f"must be a whole number ≥ 1, not {_type_name(value)}")
                    continue
                if not 1 <= value <= MAX_COUNT:
                    self.fail(f"record.{name}", f"must be a whole number from 1 to {MAX_COUNT}")
                    continue
                result[name] = value
            else:
                value = self.text(raw, name, f"record.{name}")
                if value:
                    result[name] = value
        return result


def _plain_data(value: Any, depth: int) -> bool:
    """JSON-representable data no deeper than `depth` (no dates, bytes, sets, NaN or recursion)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth <= 0:
        return False
    if isinstance(value, list):
        return all(_plain_data(item, depth - 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain_data(v, depth - 1) for k, v in value.items())
    return False


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return str(int(value))
    return str(value)


def draft_from_mapping(data: Mapping) -> tuple[JobDraft, list[Finding]]:
    """A JobDraft from a parsed mapping, plus a Finding for every wrong type or unknown field."""
    reader = _Reader()
    reader.unknown_keys(data, TOP_FIELDS, "")
    raw_roles = data.get("roles")
    roles = []
    if raw_roles is not None and not isinstance(raw_roles, list):
        reader.fail("roles", f"must be a list of roles, not {_type_name(raw_roles)}")
    for index, item in enumerate(raw_roles if isinstance(raw_roles, list) else []):
        role = reader.role(item, f"roles[{index}]")
        roles.append(role if role is not None else RoleDraft(name=""))
    draft = JobDraft(
        name=reader.text(data, "name", "name"),
        display_name=reader.text(data, "displayName", "displayName"),
        type=reader.text(data, "type", "type"),
        header=reader.text(data, "header", "header"),
        roles=tuple(roles),
        domain=reader.text(data, "domain", "domain"),
        ssh_public_key=reader.text(data, "sshPublicKey", "sshPublicKey"),
        run_script=reader.text(data, "runScript", "runScript"),
        tensorboard_dir=reader.text(data, "tensorboardDir", "tensorboardDir"),
        debuggable=reader.flag(data, "debuggable", "debuggable"),
        record=reader.record(data),
    )
    return draft, reader.findings


def parse_yaml(text: str | bytes, what: str = "draft") -> Any:
    """Parsed YAML of a draft or Node list; DraftInputError (exit 2) when it cannot be read at all."""
    if isinstance(text, bytes):
        if len(text) > MAX_DRAFT_BYTES:
            raise DraftInputError(f"{what} is larger than {MAX_DRAFT_BYTES // (1024 * 1024)} MiB")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DraftInputError(f"{what} is not UTF-8 text (byte {exc.start})") from None
    if len(text) > MAX_DRAFT_BYTES:
        raise DraftInputError(f"{what} is larger than {MAX_DRAFT_BYTES // (1024 * 1024)} MiB")
    try:
        return load_yaml(text, _LOADER)
    except YamlBound as exc:
        raise DraftInputError(f"{what} {exc}: not read") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = (exc.problem or exc.context or "invalid YAML").strip()
        raise DraftInputError(f"{what} is not valid YAML{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise DraftInputError(f"{what} is not valid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise DraftInputError(f"{what} is nested too deeply to read") from None


def duplicate_keys(text: str) -> list[Finding]:
    """An error for every key given twice in one YAML mapping (YAML would silently keep the last)."""
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except (yaml.YAMLError, RecursionError):
        return []
    findings: list[Finding] = []
    seen_nodes: set[int] = set()
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys_seen: set[str] = set()
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                where = field_path(path, key)
                if key in keys_seen:
                    findings.append(error(where, f"given twice (line {key_node.start_mark.line + 1})"))
                keys_seen.add(key)
                stack.append((value_node, where))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                stack.append((item, f"{path}[{index}]"))
    return sorted(findings, key=lambda f: f.field)


def read_yaml(text: str | bytes, what: str = "draft") -> tuple[Any, list[Finding]]:
    """A draft's or a manifest's YAML (parse_yaml) and an error for every key given twice in it: YAML keeps the
    last, so a file someone hands over can show one value where a reader looks and send another (kubectl refuses
    such a manifest too)."""
    data = parse_yaml(text, what)
    return data, duplicate_keys(text.decode("utf-8") if isinstance(text, bytes) else text)


def load_draft(source: str | bytes | Mapping) -> tuple[JobDraft, list[Finding]]:
    """A JobDraft from YAML text/bytes or an already parsed mapping, plus loading Findings.

    Raises DraftInputError when the input is unusable: undecodable, not YAML, or not a mapping at the top.
    """
    findings: list[Finding] = []
    if isinstance(source, Mapping):
        data = source
    else:
        data, findings = read_yaml(source)
    if not isinstance(data, Mapping):
        raise DraftInputError(f"draft must be a YAML mapping (name:, roles:, ...), not {_type_name(data)}")
    draft, load_findings = draft_from_mapping(data)
    return draft, findings + load_findings


def too_many_roles(draft: JobDraft, what: str = "the draft") -> str:
    """The one line by which the wizard refuses a draft of more than MAX_ROLES roles, or a role of more than
    MAX_ROLE_ENTRIES env entries, mounts, selector labels, devices or picked Nodes ("" within the bounds): the
    form checks and lays out the whole draft at each keystroke, and one role's 30,000 env entries (a 400 KB draft)
    were 3 s to open and 0.9 s a keystroke of the UI thread. `rlark edit` and `rlark draft render` take any."""
    if len(draft.roles) > MAX_ROLES:
        return f"{what} has {len(draft.roles):,} roles, more than the wizard's {MAX_ROLES}: not opened in it"
    for role in draft.roles:
        for entries, count in (("env entries", len(role.env)), ("mounts", len(role.mounts)),
                               ("selector labels", len(role.selector)), ("devices", len(role.devices)),
                               ("picked Nodes", len(role.nodes))):
            if count > MAX_ROLE_ENTRIES:
                return (f"{what} has a role of {count:,} {entries}, more than the wizard's {MAX_ROLE_ENTRIES}: not "
                        "opened in it")
    return ""


def _mount_to_dict(mount: Mount) -> dict:
    result: dict[str, str] = {"type": mount.type}
    if mount.source:
        result["source"] = mount.source
    if mount.storage_class:
        result["storageClass"] = mount.storage_class
    result["target"] = mount.target
    return result


def _role_to_dict(role: RoleDraft) -> dict:
    result: dict[str, Any] = {"name": role.name}
    values = [("role", role.role), ("cluster", role.cluster), ("selector", dict(role.selector)),
              ("gpu", role.gpu), ("devices", dict(role.devices)), ("cpu", role.cpu), ("memory", role.memory),
              ("image", role.image), ("prepareScript", role.prepare_script), ("env", dict(role.env)),
              ("mounts", [_mount_to_dict(m) for m in role.mounts]), ("hardware", role.hardware),
              ("workers", role.workers), ("nodes", list(role.nodes))]
    result.update((key, value) for key, value in values if value)
    return result


def draft_to_mapping(draft: JobDraft) -> dict:
    """The draft as the documented YAML structure (empty optional fields left out)."""
    values = [("name", draft.name), ("displayName", draft.display_name), ("type", draft.type),
              ("header", draft.header), ("roles", [_role_to_dict(r) for r in draft.roles]),
              ("domain", draft.domain), ("sshPublicKey", draft.ssh_public_key), ("runScript", draft.run_script),
              ("tensorboardDir", draft.tensorboard_dir), ("debuggable", draft.debuggable),
              ("record", dict(draft.record))]
    return {key: value for key, value in values if value}


class _BlockDumper(_DUMPER_BASE):
    """Multi-line strings (scripts) as `|` blocks, so dumped YAML stays readable; one holding a bidi control or a
    line separator double-quoted, where each is an escape (sinks.yaml_quoted: the draft is read before it is sent,
    and a raw U+202E shows a command reordered); a lone surrogate as its escape (`rlark clone` of a Job whose
    display name held JSON's '\\ud800' ended in a crash report)."""


def _represent_str(dumper: _BlockDumper, value: str) -> yaml.Node:
    if not value.isascii():  # libyaml encodes each string as UTF-8: a lone surrogate (JSON's \ud800) as its escape
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    style = '"' if yaml_quoted(value) else "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """YAML text with keys in insertion order and scripts as literal blocks."""
    return yaml_escaped(yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=2**31 - 1))


def dump_draft(draft: JobDraft) -> str:
    """The draft as YAML text that `load_draft` reads back to an equal draft."""
    return dump_yaml(draft_to_mapping(draft))
