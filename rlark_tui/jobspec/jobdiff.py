"""What changed between two runs: two Jobs reduced to what a user set (per role, plus the Job and its
launch record), compared field by field, rendered unified or side by side. Pure; secrets masked.

Left out as noise: `status`, metadata other than the display name, rlark's submission hashes and plan, and
names derived from the Job name (`pvc-<job>-<task>-<volume>` claims, `pvcStorageMap` keys).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlark_tui.model.objects import Job, TaskSpec
from rlark_tui.text.redact import KnownSecrets, redact_env, redact_text, secret_values
from rlark_tui.text.sinks import cell_width, clip, one_line, pad

ABSENT = "(none)"


@dataclass(frozen=True)
class Change:
    """One field that differs: `section` is `job`, `record` or `role <task>`; values are display text."""

    section: str
    field: str
    old: str
    new: str


def _text(value: Any) -> str:
    if value is None or value == "" or value == {} or value == []:
        return ABSENT
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _mounts(task: TaskSpec) -> dict[str, str]:
    """Mount target -> what backs it: the host path, or the storage class (never the derived claim name)."""
    classes = task.pvc_storage_map
    result = {}
    for mount in task.mounts:
        if mount["type"] == "storage":
            result[mount["target"]] = f"storage {classes.get(mount['source'], '') or '(default class)'}"
        else:
            result[mount["target"]] = f"{mount['type']} {mount['source']}".strip()
    return result


def _role_fields(task: TaskSpec) -> dict[str, Any]:
    env = {e.get("name", ""): e.get("value", e.get("valueFrom")) for e in redact_env(task.env)}
    fields: dict[str, Any] = {
        "role": task.role, "head": "yes" if task.head else "no", "image": task.image,
        "nodeSelector": task.node_selector, "replicas": str(task.replicas), "workload": task.workload_kind,
        "resources.requests": task.requests, "resources.limits": task.limits,
        "prepareScript": task.prepare_script, "runScript": task.run_script,
        "tensorBoardDir": task.tensorboard_dir,
    }
    fields.update((f"env.{name}", value) for name, value in env.items())
    fields.update((f"mount {target}", backing) for target, backing in _mounts(task).items())
    return fields


def comparable(job: Job) -> dict[str, dict[str, Any]]:
    """Section -> field -> value, for every section of one Job (roles keyed by their task name)."""
    sections: dict[str, dict[str, Any]] = {
        "job": {"displayName": job.display_name, "domain": job.domain, "sshPublicKey": job.ssh_public_key,
                "stopped": "yes" if job.stopped else "no"},
        "record": {key: value for key, value in job.launch_record.items()},
    }
    for task in job.tasks:
        sections[f"role {task.name}"] = _role_fields(task)
    return sections


def diff_jobs(a: Mapping, b: Mapping) -> list[Change]:
    """Every field that differs between Job `a` and Job `b`, sections in order (job, record, roles of `a`
    then roles only `b` has), fields in the order they were first seen."""
    left, right = comparable(Job(a)), comparable(Job(b))
    known = KnownSecrets(secret_values([a, b]))
    """Both Jobs' secret env values, masked wherever either shows them: a run script that echoes one, or an entry
    of a name that says nothing (a control plane that renamed WANDB_API_KEY `0`) showed it in the diff."""
    changes = []
    for section in list(left) + [s for s in right if s not in left]:
        old, new = left.get(section, {}), right.get(section, {})
        for field in list(old) + [f for f in new if f not in old]:
            before, after = _text(old.get(field)), _text(new.get(field))
            if before != after:
                changes.append(Change(section, field, redact_text(known.mask_lines(before)),
                                      redact_text(known.mask_lines(after))))
    return changes


DIFF_LINES = 1_000
"""The longest value compared line by line: difflib's matching is quadratic, and two Jobs' scripts of 40,000 lines
each, one line in two alike (240 KB), took minutes of `rlark diff`, and of the TUI's UI thread in the diff screen."""


def render_unified(changes: list[Change], a: str, b: str) -> str:
    """`--- a` / `+++ b`, then per section `@@ section` and `-`/`+` lines; multi-line values as line diffs."""
    if not changes:
        return ""
    out = [f"--- {a}", f"+++ {b}"]
    section = None
    for change in changes:
        if change.section != section:
            section = change.section
            out.append(f"@@ {one_line(section)}")
        field = one_line(change.field)
        if "\n" in change.old or "\n" in change.new:
            out.append(f" {field}:")
            old, new = change.old.splitlines(), change.new.splitlines()
            if len(old) > DIFF_LINES or len(new) > DIFF_LINES:
                out.append(f"   {len(old):,} lines -> {len(new):,} lines: more than {DIFF_LINES:,}, not compared line "
                           "by line (`rlark get job NAME -o yaml` shows each)")
                continue
            lines = difflib.unified_diff(old, new, lineterm="", n=1)
            out.extend(f"   {one_line(line)}" for line in list(lines)[2:])
        else:
            out.append(f"-{field}: {one_line(change.old)}")
            out.append(f"+{field}: {one_line(change.new)}")
    return "\n".join(out) + "\n"


def render_side_by_side(changes: list[Change], a: str, b: str, width: int = 120) -> str:
    """Three columns, FIELD | a | b, grouped by section; long values are cut to the column."""
    if not changes:
        return ""
    field_width = min(28, max(cell_width(one_line(c.field)) for c in changes))
    column = max(12, (width - field_width - 6) // 2)

    def cut(text: str, width: int = column) -> str:
        """One line in `width` terminal columns, padded (sinks.clip, sinks.pad): a Job's value of wide characters
        cut by its length took twice the columns, and its own text stood in the other Job's column."""
        return pad(clip(one_line(text.replace("\n", "⏎")), width), width)

    out = [f"{cut('FIELD', field_width)}  {cut(a)}  {cut(b)}".rstrip()]
    section = None
    for change in changes:
        if change.section != section:
            section = change.section
            out.append(f"[{one_line(section)}]")
        out.append(f"{cut(change.field, field_width)}  {cut(change.old)}  {cut(change.new)}".rstrip())
    return "\n".join(out) + "\n"
