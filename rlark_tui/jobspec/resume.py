"""A run script that resumes from a checkpoint (issue 35 item 4): RLinf takes `runner.resume_dir=<global_step_N
dir>` as a Hydra override on its command line (rlinf-runtime.md §3.3), so the override is set where the run
command takes its overrides: an existing `runner.resume_dir=` word is replaced, else the override is appended to
the script's last command line. Pure: text in, text out.
"""

from __future__ import annotations

import re
import shlex

OVERRIDE = "runner.resume_dir"
_EXISTING = re.compile(r"(?<![\w.])" + re.escape(OVERRIDE) + r"=(?:'[^']*'|\"[^\"]*\"|\S*)")


def with_resume_dir(run_script: str, resume_dir: str) -> str:
    """`run_script` with `runner.resume_dir` set to `resume_dir` (quoted for the shell)."""
    word = f"{OVERRIDE}={shlex.quote(resume_dir)}"
    if _EXISTING.search(run_script):
        return _EXISTING.sub(lambda _: word, run_script, count=1)
    lines = run_script.rstrip("\n").split("\n")
    for index in range(len(lines) - 1, -1, -1):
        text = lines[index].strip()
        if text and not text.startswith("#"):
            lines[index] = lines[index].rstrip().removesuffix("\\").rstrip() + " " + word
            return "\n".join(lines) + ("\n" if run_script.endswith("\n") else "")
    raise ValueError("the Header role has no run command to pass runner.resume_dir to")


def resume_step(resume_dir: str) -> int | None:
    """N of a `…/global_step_<N>` directory, as RLinf parses it (the text after `global_step_`)."""
    digits = resume_dir.rstrip("/").rpartition("global_step_")[2]
    return int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 12 else None
