"""Saving run-check records: markdown + JSON under `<state dir>/checks/`, private (0600) and atomic; and the
report screen's hand-over fields as they are typed (`<state dir>/checks/hand-over/<context>/<Job>.json`, per Job:
hand_over_path), so a crash before the record is saved loses none of them.

The I/O edge shared by `rlark check` and the TUI report screen; `list_records` / `read_record` serve `:records`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC
from pathlib import Path

from rlark_tui.checks.render import to_json, to_markdown
from rlark_tui.checks.report import CheckReport, HandOver, HandOverKey
from rlark_tui.errors import RlarkError
from rlark_tui.local import fsutil
from rlark_tui.text.parse import load_json
from rlark_tui.text.sanitize import json_dumps
from rlark_tui.text.sinks import NAME_CHARS, cut, file_name, keyed_name, object_file_name


def save_record(root: Path, report: CheckReport, lang: str = "en") -> Path:
    """Save the record as markdown + JSON under `<root>/checks/`, mode 0600, atomically; returns the .md path."""
    stamp = report.checked_at.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    base = f"{file_stem(report.job)}-{stamp}"
    markdown = root / "checks" / f"{base}.md"
    write_record(markdown, to_markdown(report, lang))
    document = to_json(report, lang) | ({"uid": report.uid} if report.uid else {})
    write_record(root / "checks" / f"{base}.json", json_dumps(document, ensure_ascii=False, indent=2) + "\n")
    return markdown


def write_record(path: Path, text: str, *, named: bool = False) -> None:
    """Write a record or report atomically through rlark_tui.local.fsutil (0600, or the ordinary mode for a path the
    user `named`, as `--output`): readers never see half of it; an OSError becomes one RlarkError line, a
    destination others may write is refused (fsutil.UnsafeDestination)."""
    try:
        fsutil.write_file(path, text, named=named)
    except OSError as exc:
        raise RlarkError(f"cannot write the record to {path}: {exc.strerror or exc}") from None


def file_stem(job: str) -> str:
    """The Job name as typed, made a plain file name: a name like `../x` or `/tmp/x` (which no Job has, but
    `rlark check` accepts) must not put a record outside `<state dir>/checks/`."""
    return object_file_name(job, 200)


def hand_over_path(root: Path, key: HandOverKey) -> Path:
    """`<root>/checks/hand-over/<context>/<job/uid>.json` (each a sinks.keyed_name, so names that differ only where a
    file name makes them alike stay apart)."""
    return root / "checks" / "hand-over" / keyed_name(key.context, 80) / f"{keyed_name(f'{key.job}/{key.uid}', 160)}.json"


def _name_only_path(root: Path, job: str) -> Path:
    """Where rlark kept hand-over fields before they were kept per Job (hand_over_path): under the name alone."""
    return root / "checks" / "hand-over" / f"{file_name(job, 200)}.json"


def save_hand_over(root: Path, key: HandOverKey, hand_over: HandOver) -> None:
    """Keep what was typed into the hand-over fields (atomic, 0600; not fsynced: it is written at every
    keystroke); RlarkError when it cannot be written."""
    path = hand_over_path(root, key)
    try:
        fsutil.write_private(path, json.dumps(asdict(hand_over), ensure_ascii=False) + "\n", durable=False)
    except OSError as exc:
        raise RlarkError(f"cannot keep the hand-over fields in {path}: {exc.strerror or exc}") from None


def load_hand_over(root: Path, key: HandOverKey) -> tuple[HandOver, bool]:
    """The hand-over fields kept for the Job `key` (empty when there are none or the file cannot be used), and
    whether they are ones an earlier rlark kept under the Job's name alone: those are taken once, by the first Job
    of that name whose fields are loaded (moved to its own file), and the screen says so."""
    kept = _read_hand_over(hand_over_path(root, key))
    if kept is not None:
        return kept, False
    old = _name_only_path(root, key.job)
    kept = _read_hand_over(old)
    if kept is None or kept == HandOver():
        return HandOver(), False
    try:
        save_hand_over(root, key, kept)
    except RlarkError:
        return kept, True
    fsutil.remove_quietly(old)
    return kept, True


def _read_hand_over(path: Path) -> HandOver | None:
    """The hand-over fields of a kept file; None when there is none or it cannot be used."""
    try:
        data = load_json(fsutil.read_own(path, RECORD_BYTES))
    except (OSError, ValueError, RlarkError):
        return None
    if not isinstance(data, dict):
        return None

    def text(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) and value else None

    def texts(key: str) -> tuple[str, ...]:
        value = data.get(key)
        return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()

    decision = data.get("decision")
    return HandOver(recorder=text("recorder"), contacts=texts("contacts"),
                    decision=decision if decision in ("continue", "stop", "keep") else None,
                    notes=text("notes"), retention=text("retention"), links=texts("links"),
                    cleaned_up=data.get("cleaned_up") is True)


def clear_hand_over(root: Path, key: HandOverKey) -> None:
    fsutil.remove_quietly(hand_over_path(root, key))


LISTED_RECORDS = 500
RECORD_BYTES = 1 << 20


@dataclass(frozen=True)
class SavedRecord:
    """One saved record as `:records` lists it: the Job and when it was checked (each cut at sinks.NAME_CHARS),
    how many of its checks passed of how many, its .md file. A record is read up to RECORD_BYTES, and 500 of them
    held whole (a Job name of 1 MiB, 40,000 results) were ~500 MB where a row shows a cut cell and a count."""

    job: str
    checked_at: str
    passed: int
    checks: int
    path: str


def list_records(root: Path, limit: int = LISTED_RECORDS) -> list[SavedRecord]:
    """The newest `limit` records under `<root>/checks/` (newest first), from their JSON documents; a file that is
    not one rlark wrote is left out (fsutil.read_own: nor one another user planted in a shared state directory)."""
    files = fsutil.list_own(root / "checks", "*.json")[::-1]
    records: list[SavedRecord] = []
    for path in files:
        if len(records) >= limit:
            break
        try:
            data = load_json(fsutil.read_own(path, RECORD_BYTES))
        except (OSError, ValueError, RlarkError):
            continue
        checks = data.get("checks") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(checks, list) or not isinstance(data.get("job"), str):
            continue
        results = [check.get("result") for check in checks if isinstance(check, dict)]
        records.append(SavedRecord(cut(data["job"], NAME_CHARS), cut(str(data.get("checkedAt") or ""), NAME_CHARS),
                                   results.count("pass"), len(results), str(path.with_suffix(".md"))))
    return records


def read_record(path: Path) -> str:
    """A saved record's markdown (at most RECORD_BYTES); RlarkError when it cannot be read."""
    try:
        return fsutil.read_own(path, RECORD_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        raise RlarkError(f"cannot read the record {path}: {exc.strerror or exc}") from None
