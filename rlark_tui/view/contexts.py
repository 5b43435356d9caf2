"""Several control planes in one list: the merged job rows (each Job's row with its context, keyed by
`name@context`) and each context's connection state for the header, from each context's own SnapshotIndex."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from rlark_tui.view.index import JobRow, SnapshotIndex, row_key

CONTROL_PLANE = "control plane"  # flow.reconciler.CONTROL_PLANE: the source the Jobs come from


@dataclass(frozen=True)
class ContextState:
    """One context's line in the header: its name, `connecting`, `connected` or `unreachable`, and why."""

    context: str
    status: str
    reason: str = ""


def context_state(context: str, index: SnapshotIndex | None, error: str = "") -> ContextState:
    """The state of one context: `error` when it could not be opened at all, else its control plane's source.
    Its Jobs stay listed while it is unreachable (as last read)."""
    if error:
        return ContextState(context, "unreachable", error)
    source = index.snapshot.sources.get(CONTROL_PLANE) if index is not None else None
    if source is None or (source.status == "stale" and source.reason == "connecting"):
        return ContextState(context, "connecting")
    if source.status == "connected":
        return ContextState(context, "connected")
    return ContextState(context, "unreachable", source.reason.removesuffix("; reconnecting"))


class MergedRows:
    """The job list's rows over several contexts: each index's rows with their context, keyed by
    `JobRow.key`, in the contexts' order; a row is tagged again only when its index derived it anew, so the list
    reuses the cells of the unchanged ones."""

    def __init__(self) -> None:
        self._tagged: dict[str, tuple[JobRow, JobRow]] = {}
        self.rows: dict[str, JobRow] = {}

    def update(self, indexes: Mapping[str, SnapshotIndex | None]) -> dict[str, JobRow]:
        rows: dict[str, JobRow] = {}
        tagged: dict[str, tuple[JobRow, JobRow]] = {}
        for context, index in indexes.items():
            for row in index.rows.values() if index is not None else ():
                key = row_key(context, row.name)
                kept = self._tagged.get(key)
                shown = kept[1] if kept is not None and kept[0] is row else dataclasses.replace(row, context=context)
                tagged[key] = (row, shown)
                rows[key] = shown
        self._tagged, self.rows = tagged, rows
        return rows
