"""Evidence references: how a value is shown in an evidence item, and how an item is looked up again.

`resolve(evidence, item)` returns what the evidence holds at the item's reference, shown the same way.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rlark_tui.checks.evidence import RunEvidence
from rlark_tui.checks.report import EvidenceItem
from rlark_tui.model.objects import dig
from rlark_tui.text.redact import KnownSecrets, redact_env, redact_object, redact_text, secret_values

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_COMPACT = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
"""How evidence shows a value that is not a string: compact sorted JSON (json.dumps with these arguments makes an
encoder at each call; the check shows some 200 values a run)."""


def show(path: str, value: Any) -> str:
    """A value as evidence shows it: strings as they are, the rest as compact sorted JSON; secrets masked."""
    if path.endswith(".env") or path == "env":
        value = redact_env(value) if value is not None else value
    if isinstance(value, str):
        return redact_text(value)
    return _COMPACT.encode(redact_object(value))


def dig_path(obj: Any, path: str) -> Any:
    """The value at a dotted path with [i] indexes (`spec.tasks[0].nodeSelector`); None when absent."""
    return dig(obj, *(name or int(index) for name, index in _STEP.findall(path)))


def object_of(evidence: RunEvidence, ref: str) -> dict[str, Any] | None:
    """The object an `object` item names: Job/<name>, Task/<ns>/<name>, Pod/<ns>/<name>, Node/<ns>/<name>."""
    kind, _, rest = ref.partition("/")
    if kind == "Job":
        return evidence.job if evidence.job and evidence.job.get("metadata", {}).get("name") == rest else None
    pool = {"Task": evidence.tasks, "Pod": evidence.pods, "Node": evidence.nodes}.get(kind, ())
    namespace, _, name = rest.partition("/")
    for obj in pool:
        meta = obj.get("metadata") or {}
        if meta.get("name") == name and (meta.get("namespace") or "") == namespace:
            return obj
    return None


def record_of(evidence: RunEvidence, ref: str) -> dict[str, Any] | None:
    return {"launch-record": evidence.launch_record, "deployment-plan": evidence.plan,
            "submitted-spec": evidence.submitted_spec,
            "submission": {"sha256": evidence.submitted_sha256, "yaml": evidence.submitted_yaml_path}}.get(ref)


def resolve(evidence: RunEvidence, item: EvidenceItem) -> str | None:
    """What the evidence holds where `item` points, shown like `item.value` (the Job's own secret values masked);
    None if nothing is there."""
    shown = _resolve(evidence, item)
    known = KnownSecrets(secret_values(evidence.job))
    return known.mask_lines(shown) if shown is not None and known else shown


def _resolve(evidence: RunEvidence, item: EvidenceItem) -> str | None:
    if item.kind == "object":
        obj = object_of(evidence, item.ref)
        if obj is None:
            return None
        return show(item.path or "", dig_path(obj, item.path or ""))
    if item.kind == "record":
        record = record_of(evidence, item.ref)
        if record is None:
            return None
        return show(item.path or "", dig_path(record, item.path or ""))
    if item.kind == "log":
        for log in evidence.logs:
            if log.pod == item.ref and log.container == (item.container or "main") and log.instance == item.instance:
                if item.line and 1 <= item.line <= len(log.lines):
                    return redact_text(log.lines[item.line - 1])
        return None
    if item.kind == "file":
        for probe_file in (evidence.outputs.files if evidence.outputs else ()):
            if probe_file.path == item.ref:
                return probe_file.sha256 if item.sha256 else str(probe_file.size)
        return None
    if item.kind == "container":
        container = evidence.container_of(item.ref)
        return container.image_id if container and item.path == "imageID" else None
    if item.kind == "ray":
        if evidence.ray is None or evidence.ray.route != item.ref:
            return None
        return str(evidence.ray.alive_nodes)
    if item.kind == "event":
        for event in evidence.events.get(item.ref, ()):
            text = redact_text(f"{event.type} {event.reason}: {event.message}")
            if text == item.value:
                return text
        return None
    return item.value if item.kind == "check" else None
