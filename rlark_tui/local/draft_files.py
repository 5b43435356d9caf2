"""The create-job wizard's draft files: the autosave (offered again after a restart or crash) and import/export.

Every file is written by rlark_tui.local.fsutil.write_private (atomic, mode 0600), in the `rlark draft render`
format; exports are fsynced, the autosave (written at every change, on the UI thread) is not: a killed app
leaves it whole, only a power cut can lose its last seconds. It lives under the state dir of rlark_tui.local.config.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rlark_tui.errors import UsageError
from rlark_tui.jobspec.draft import MAX_DRAFT_BYTES, JobDraft, dump_draft, load_draft
from rlark_tui.jobspec.findings import Finding
from rlark_tui.local.config import state_dir
from rlark_tui.local.fsutil import list_own, read_input, read_own, remove_quietly, write_private
from rlark_tui.text.parse import ascii_int
from rlark_tui.text.sinks import one_line, shell_line

AUTOSAVE_NAME = "wizard-autosave.yaml"
"""The autosave an rlark before one file a process kept (DraftStore)."""
AUTOSAVE_PREFIX = "wizard-autosave-"


def _running(pid: int | None) -> bool:
    """Whether process `pid` (the one a draft's name says wrote it) still runs."""
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True
    return True
_HEADER = re.compile(r"^# rlark wizard autosave: step (\d) of 4, saved (\S+)")


@dataclass(frozen=True)
class SavedDraft:
    """An autosaved wizard draft: the draft, the step the user was on, when it was saved, loading findings."""

    draft: JobDraft
    step: int
    saved_at: str
    findings: list[Finding]

    def summary(self) -> str:
        """One line (sinks.one_line) of at most a few hundred characters: the draft may be someone else's (an
        import, a clone), its names any text, and a 4 MiB autosave whose name, role names and save time were 3 MB
        of text took the UI thread 4 s to lay out in the offer. Each is cut to SUMMARY_CHARS, and the roles past
        SUMMARY_ROLES are counted."""
        draft = self.draft
        roles = ", ".join(_cut(role.name or "?") for role in draft.roles[:SUMMARY_ROLES]) or "no roles"
        if len(draft.roles) > SUMMARY_ROLES:
            roles += f" (+{len(draft.roles) - SUMMARY_ROLES:,} more)"
        return one_line(f"{_cut(draft.name or '(no name yet)')} · {_cut(draft.type)} · roles: {roles} · "
                        f"step {self.step} of 4 · saved {_cut(self.saved_at)}")


SUMMARY_CHARS = 64
SUMMARY_ROLES = 8


def _cut(text: str) -> str:
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 1] + "…"


class DraftStore:
    """The wizard's autosave under `<state dir>/drafts/`: one file a process (`wizard-autosave-<pid>.yaml`), so two
    rlark on one state dir (two TUIs, each with its wizard) neither write over each other's draft at every change
    nor, at a submit, remove the other's. A draft a process left (it ended, or crashed: its pid is gone), or the one
    an rlark before this kept for every process (AUTOSAVE_NAME), is offered by `load`, newest first, and taken over
    as the process's own."""

    def __init__(self, root: Path | None = None, pid: int | None = None) -> None:
        self.folder = (root or state_dir()) / "drafts"
        self.path = self.folder / f"{AUTOSAVE_PREFIX}{pid or os.getpid()}.yaml"

    def save(self, draft: JobDraft, step: int) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        write_private(self.path, f"# rlark wizard autosave: step {step} of 4, saved {stamp}\n"
                                 f"# Render it with `{shell_line(['rlark', 'draft', 'render', '--nodes', 'NODES.yaml'], [self.path.name])}`.\n"
                                 + dump_draft(draft), durable=False)

    def _left(self) -> list[Path]:
        """The drafts no running rlark is writing: of processes gone, and the one for every process, newest first."""
        left = [path for path in list_own(self.folder, f"{AUTOSAVE_PREFIX}*.yaml")
                if path != self.path and not _running(ascii_int(path.name[len(AUTOSAVE_PREFIX):-len(".yaml")]))]

        def when(path: Path) -> float:
            try:
                return path.stat().st_mtime
            except OSError:
                return 0.0
        return sorted([*left, self.folder / AUTOSAVE_NAME], key=when, reverse=True)

    def _read(self, path: Path) -> bytes | None:
        try:
            return read_own(path, MAX_DRAFT_BYTES)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UsageError(f"autosaved draft {path}: cannot read it ({exc.strerror or exc})") from None

    def load(self) -> SavedDraft | None:
        """This process's autosaved draft, else the newest one left by another (then this process's own: written
        here, removed there), or None when there is none. Raises UsageError when it cannot be read."""
        text = self._read(self.path)
        for path in self._left() if text is None else ():
            text = self._read(path)
            if text is not None:
                write_private(self.path, text, durable=False)
                remove_quietly(path)
                break
        if text is None:
            return None
        draft, findings = load_draft(text)
        header = _HEADER.match(text.decode("utf-8", "replace"))
        step = int(header.group(1)) if header else 1
        return SavedDraft(draft, min(max(step, 1), 4), header.group(2) if header else "?", findings)

    def clear(self) -> None:
        remove_quietly(self.path)


def export_draft(path: Path, draft: JobDraft) -> None:
    """Write the draft where the user asked (atomic, 0600: env values may be sensitive)."""
    try:
        write_private(path, dump_draft(draft))
    except OSError as exc:
        raise UsageError(f"export to {path}: {exc.strerror or exc}") from None


def import_draft(path: Path) -> tuple[JobDraft, list[Finding]]:
    """A draft file in the `rlark draft render` format; UsageError (one line) when it cannot be used."""
    return load_draft(read_input(str(path), "import", MAX_DRAFT_BYTES))
