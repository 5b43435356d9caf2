"""A run script that resumes from a checkpoint (issue 35 item 4): RLinf takes `runner.resume_dir=<global_step_N
dir>` as a Hydra override on its command line (rlinf-runtime.md §3.3), so the override is set where the run
command takes its overrides: an existing `runner.resume_dir=` word is replaced, else the override is appended to
the script's last command line; the Job with only that field changed (`resumed`), and what a resume does, in the
words the CLI and the TUI's dialog share. Pure.

A finished Job (Succeeded or Failed) is terminal for the platform's Job controller (rlark-platform.md §3: it skips
their reconcile, so a PUT changes nothing); a resume of one is the platform's delete and re-create, under the same
name, with the resumed spec (`consequence`). A running Job whose run command already resumes from the checkpoint
chosen (a second resume from the same step) is stopped and started again: an Edit & Restart would change no Pod.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Mapping
from typing import Any

from rlark_tui.errors import RlarkError
from rlark_tui.model.lifecycle import TERMINAL_PHASES
from rlark_tui.text.parse import MAX_YAML_DEPTH, ascii_int, nested_deeper

OVERRIDE = "runner.resume_dir"
CONSEQUENCE = ("Resume is an Edit & Restart: the Job's spec is replaced with the run command below and the Job "
               "is restarted; RLinf loads the checkpoint and continues at the step after it.")
RECREATE = ("The Job is {phase}: the platform treats a finished Job as done and ignores edits of it, so resume "
            "deletes it and, once it and its Tasks and Pods are gone, creates it again under the same name with the "
            "run command below (its Tasks, Pods, head Service and task PVCs are new; object-storage and host-"
            "directory data stay). RLinf loads the checkpoint and continues at the step after it.")
CYCLE = ("The run command already resumes from there, so the Job's Pods would not change, and the platform "
         "restarts a running Job's Pods only when their template changes: resume stops the Job, waits until its Pods "
         "are gone and starts it again; RLinf loads the checkpoint and continues at the step after it.")
FORCE_NOTE = "RLinf may fail to load it, and only after the restart."
_WORD = r"""(?:'[^']*'|"(?:[^"\\]|\\.)*"|\\.|[^\s'"\\])*"""
"""One whole shell word (its quoted and escaped parts with it): the existing override is replaced to its end, so a
second resume leaves nothing of a quoted first one (`'/o/x'"'"'y'` was cut after `'/o/x'`) and never half a quote."""
_EXISTING = re.compile(r"(?<![\w.])" + re.escape(OVERRIDE) + "=" + _WORD)
_SPACE_OR_WORD = re.compile(r"\s+|" + _WORD)


def consequence(phase: str, same: bool = False) -> str:
    """What a resume of a Job in `phase` does: an Edit & Restart, for a finished Job a delete and re-create, and
    when the run command already resumes from that checkpoint (`same`, see `unchanged`) a stop and start."""
    if phase in TERMINAL_PHASES:
        return RECREATE.format(phase=phase)
    return CYCLE if same else CONSEQUENCE


def unchanged(raw: Mapping[str, Any], manifest: Mapping[str, Any]) -> bool:
    """The resumed Job's tasks are the live Job's: its run command already resumes from that checkpoint. The
    platform's agent copies a Task's template into its StatefulSet, whose Pods roll only when it changes, so an
    Edit & Restart that changes no task restarts nothing (rlark-platform.md §3: a restart only un-stops)."""
    live, wanted = raw.get("spec"), manifest.get("spec")
    return isinstance(live, Mapping) and isinstance(wanted, Mapping) and live.get("tasks") == wanted.get("tasks")


def with_resume_dir(run_script: str, resume_dir: str) -> str:
    """`run_script` with `runner.resume_dir` set to `resume_dir` (quoted for the shell), in a command, never in a
    comment: an override appended after a line's `# comment` would be part of the comment, and the run would start
    from scratch."""
    word = f"{OVERRIDE}={shlex.quote(resume_dir)}"
    lines = run_script.split("\n")
    parts = [_code_and_comment(line) for line in lines]
    for index, (code, comment) in enumerate(parts):
        if _EXISTING.search(code):
            lines[index] = _EXISTING.sub(lambda _: word, code, count=1) + comment
            return "\n".join(lines)
    for index in range(len(lines) - 1, -1, -1):
        code, comment = parts[index]
        if code.strip():
            lines[index] = code.rstrip().removesuffix("\\").rstrip() + " " + word + (" " + comment if comment else "")
            return "\n".join(lines)
    raise ValueError("the Header role has no run command to pass runner.resume_dir to")


def _code_and_comment(line: str) -> tuple[str, str]:
    """A script line's command and its comment: from a `#` that begins a word outside quotes, as the shell reads
    it ('' when there is none)."""
    at = 0
    while at < len(line):
        if line[at] == "#" and (at == 0 or line[at - 1].isspace()):
            return line[:at], line[at:]
        match = _SPACE_OR_WORD.match(line, at)
        at = match.end() if match is not None and match.end() > at else at + 1
    return line, ""


def resume_dir_of(run_script: str) -> str | None:
    """The `runner.resume_dir` a run command passes (unquoted as the shell would), or None when it passes none (a
    comment's is none)."""
    match = next((found for line in run_script.split("\n")
                  if (found := _EXISTING.search(_code_and_comment(line)[0])) is not None), None)
    if match is None:
        return None
    try:
        words = shlex.split(match.group(0))
    except ValueError:
        return None
    return words[0].partition("=")[2] if len(words) == 1 else None


def resume_step(resume_dir: str) -> int | None:
    """N of a `…/global_step_<N>` directory, as RLinf parses it (the text after `global_step_`)."""
    digits = resume_dir.rstrip("/").rpartition("global_step_")[2]
    return ascii_int(digits)


def resumed(raw: Mapping[str, Any], resume_dir: str) -> dict[str, Any]:
    """The Job with its Header task's run command resuming from `resume_dir`; only that one field changes. A Job
    nested deeper than a manifest rlark sends may be (MAX_YAML_DEPTH, what submit -f reads) is refused: the
    cluster's answers nest up to 1,024 levels, and a field of 600 made the copies on the way raise RecursionError."""
    if nested_deeper({"spec": raw.get("spec"), "metadata": raw.get("metadata")}, MAX_YAML_DEPTH):
        raise RlarkError(f"resume: the Job nests deeper than {MAX_YAML_DEPTH} levels, more than a manifest rlark sends "
                         f"may (submit -f reads {MAX_YAML_DEPTH}): not resumed")
    spec = copy.deepcopy(raw.get("spec") or {})
    head = next((t for t in spec.get("tasks") or () if isinstance(t, dict) and t.get("head")), None)
    if head is None:
        raise RlarkError("resume: the Job has no Header task, so no run command to pass runner.resume_dir to")
    try:
        head["runScript"] = with_resume_dir(str(head.get("runScript") or ""), resume_dir)
    except ValueError as exc:
        raise RlarkError(f"resume: {exc}") from None
    given = raw.get("metadata")
    metadata: dict[str, Any] = given if isinstance(given, dict) else {}
    kept = {key: copy.deepcopy(metadata[key]) for key in ("labels", "annotations") if isinstance(metadata.get(key), dict)}
    return {"apiVersion": raw.get("apiVersion"), "kind": raw.get("kind"),
            "metadata": {"name": metadata.get("name"), **kept}, "spec": spec}
