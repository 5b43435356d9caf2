"""Where a run's ranks are: py-spy dumps parsed, ranks grouped by their main-thread frames, the odd ones named.

Pure: the dumps come from Ray's `/worker/traceback` or the fixed read-only `py-spy-dump` in a Pod (ray-debug.md);
this module only reads their text. Frames are compared by function and file (line numbers aside), without Ray's
plumbing (`ray/_private/`, `ray/util/tracing/`), which is the same in every rank.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rlark_tui.text.parse import ascii_int
from rlark_tui.text.redact import LineRedactor
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import FIELD_CHARS, cut, one_line

PLUMBING = ("ray/_private/", "ray/util/tracing/", "ray/_raylet")
_THREAD = re.compile(r'^Thread (\S+) \(([^)]*)\)(?:: "(.*)")?\s*$')
_FRAME = re.compile(r"^\s+(\S.*?) \(([^()]*?)(?::(\d+))?\)\s*$")
_PROCESS = re.compile(r"^Process (\d+): (.*)$")
MAX_DUMP_CHARS = 256 * 1024
"""The characters of one dump parsed: the fixed `py-spy-dump`'s own bound in a Pod (model/fixed_commands), which
Ray's `/worker/traceback` (answered up to raydash.client.MAX_TEXT_BYTES, 4 MiB) passed: every rank's 4 MiB was
kept, masked and shown."""
MAX_DUMP_LINES = 5000
"""The lines of one dump parsed (py-spy's dump of a worker is its threads' frames: a few hundred lines); a
worker's 4 MiB answer of frames was 60,000 Frame objects, for each of thousands of ranks."""
MAX_FRAMES = 200
"""The most recent frames of a thread kept (a Python stack at its default recursion limit is 1,000 deep; a
training step's is a few dozen); the rest are counted (`Thread.more`)."""
NAME_CHARS = 300
"""What is shown of a frame's function and file, and of every other name (thread, actor, class, Pod, node), the rest
counted (sinks.cut, after masking): a Python qualified name or a path in site-packages is well under it, and 32
ranks of four 1 MB function names were 190 MB of the Stacks screen's text."""
REASON_CHARS = FIELD_CHARS
"""What is shown of why a Pod gave no stack (py-spy's last line, Ray's answer, the exec's error, with how to enable
stacks), masked whole first: cut before masking, a secret across the cut showed its first characters."""
MAX_GROUPS_SHOWN = 32
MAX_OUTLIERS_SHOWN = 32
"""What render_lines shows of the groups and the odd ranks (the rest counted in one line each, `-o json` lists
them): 20 ranks whose dumps each differ in 5,000 frames were 100,000 lines, 12 s of the TUI's UI thread at 80x24."""


@dataclass(frozen=True, slots=True)
class Frame:
    function: str
    file: str
    line: int | None

    @property
    def key(self) -> tuple[str, str]:
        return self.function, self.file

    def __str__(self) -> str:
        return f"{self.function} ({self.file}:{self.line})" if self.line is not None \
            else f"{self.function} ({self.file})"


@dataclass(frozen=True, slots=True)
class Thread:
    ident: str
    name: str
    state: str
    frames: tuple[Frame, ...]
    """Most recent call first, as py-spy prints them, Ray's plumbing left out; at most MAX_FRAMES."""
    more: int = 0
    """The frames past MAX_FRAMES, left out."""


@dataclass(frozen=True, slots=True)
class Dump:
    pid: int | None
    title: str
    """The process title (`ray::<Class>.<method>`)."""
    threads: tuple[Thread, ...]

    @property
    def main(self) -> Thread | None:
        """The thread called MainThread, else the first one."""
        for thread in self.threads:
            if thread.name == "MainThread":
                return thread
        return self.threads[0] if self.threads else None


def plumbing(frame: Frame) -> bool:
    return any(part in frame.file for part in PLUMBING)


def parse_dump(text: str) -> Dump | None:
    """A `py-spy dump` text (its threads, frames most recent first; its first MAX_DUMP_LINES lines of its first
    MAX_DUMP_CHARS characters), or None when it holds no thread."""
    pid, title = None, ""
    threads: list[Thread] = []
    current: tuple[str, str, str] | None = None
    frames: list[Frame] = []

    def close() -> None:
        if current is not None:
            threads.append(Thread(current[0], current[2], current[1], tuple(frames[:MAX_FRAMES]),
                                  max(len(frames) - MAX_FRAMES, 0)))

    for line in text[:MAX_DUMP_CHARS].splitlines()[:MAX_DUMP_LINES]:
        process = _PROCESS.match(line)
        if process:
            pid, title = ascii_int(process.group(1)), process.group(2).strip()
            continue
        thread = _THREAD.match(line)
        if thread:
            close()
            current, frames = (thread.group(1), thread.group(2), thread.group(3) or ""), []
            continue
        frame = _FRAME.match(line) if current is not None else None
        if frame:
            found = Frame(frame.group(1).strip(), frame.group(2), ascii_int(frame.group(3) or ""))
            if not plumbing(found):
                frames.append(found)
    close()
    return Dump(pid, title, tuple(threads)) if threads else None


@dataclass(frozen=True, slots=True)
class Worker:
    """One live Ray worker process of the Job: its actor name and class, where it runs, and its dump."""

    name: str
    cls: str
    pid: int
    pod: str
    node: str
    dump: Dump | None = None


@dataclass(frozen=True, slots=True)
class Group:
    cls: str
    frames: tuple[Frame, ...]
    workers: tuple[Worker, ...]
    threads: tuple[Thread, ...] = ()
    """With all threads: the first worker's other threads."""
    more: int = 0
    """The main thread's frames past MAX_FRAMES (Thread.more)."""

    @property
    def count(self) -> int:
        return len(self.workers)


@dataclass(frozen=True, slots=True)
class Outlier:
    name: str
    frame: str
    reference: str
    """The frame the largest group of its class is in at the same depth."""
    others: int
    """How many ranks the largest group of its class holds."""


@dataclass(frozen=True, slots=True)
class PodError:
    pod: str
    reason: str


@dataclass(slots=True)
class Stacks:
    job: str
    source: str
    groups: list[Group] = field(default_factory=list)
    outliers: list[Outlier] = field(default_factory=list)
    errors: list[PodError] = field(default_factory=list)


def _key(dump: Dump, all_threads: bool) -> tuple:
    main = dump.main
    own = tuple(f.key for f in main.frames) if main is not None else ()
    if not all_threads:
        return own
    return own, tuple(sorted((t.name, tuple(f.key for f in t.frames)) for t in dump.threads if t is not main))


def _rank(name: str) -> tuple[str, int, str]:
    group, _, rank = name.rpartition(":")
    number = ascii_int(rank)
    return (group, number, name) if number is not None else (name, -1, name)


def group(job: str, source: str, workers: Iterable[Worker], errors: Sequence[PodError] = (),
          all_threads: bool = False) -> Stacks:
    """Workers with a dump grouped by class and main-thread frames (function and file), largest group first;
    each worker outside the largest group of its class an outlier, with the frame where it differs."""
    buckets: dict[tuple[str, tuple], list[tuple[Worker, Dump, Thread]]] = {}
    for worker in sorted(workers, key=lambda w: _rank(w.name)):
        dump = worker.dump
        main = dump.main if dump is not None else None
        if dump is not None and main is not None:
            buckets.setdefault((worker.cls, _key(dump, all_threads)), []).append((worker, dump, main))
    groups = []
    for (cls, _), members in buckets.items():
        _worker, first, first_main = members[0]
        others = tuple(t for t in first.threads if t is not first_main) if all_threads else ()
        groups.append(Group(cls, first_main.frames, tuple(member[0] for member in members), others, first_main.more))
    groups.sort(key=lambda g: (-g.count, g.cls, _rank(g.workers[0].name)))
    result = Stacks(job, source, groups, [], sorted(errors, key=lambda e: e.pod))
    largest: dict[str, Group] = {}
    for each in groups:
        largest.setdefault(each.cls, each)
    for each in groups:
        reference = largest[each.cls]
        if each is reference:
            continue
        frame, theirs = differing(each.frames, reference.frames)
        for worker in each.workers:
            result.outliers.append(Outlier(worker.name, frame, theirs, reference.count))
    result.outliers.sort(key=lambda o: _rank(o.name))
    return result


def masked(stacks: Stacks, known: Iterable[str] = ()) -> Stacks:
    """`stacks` as it may be shown: every text a cluster gave (frames, thread, actor, class, Pod and node names,
    the reasons a Pod gave no dump) cleaned of escape sequences and control characters, then with the Job's
    secret values (`known`, see text.redact.secret_values) and whatever looks like a secret masked, then cut to
    NAME_CHARS (a reason to REASON_CHARS); each on its one line (sinks.one_line: a named actor's line break shown
    as \\n, never a forged frame line)."""
    redact = LineRedactor(known)

    @functools.cache
    def text(value: str, limit: int = NAME_CHARS) -> str:
        return one_line(cut(redact(clean(value)), limit))

    @functools.cache
    def frame(found: Frame) -> Frame:
        return Frame(text(found.function), text(found.file), found.line)

    def thread(found: Thread) -> Thread:
        return Thread(text(found.ident), text(found.name), text(found.state), tuple(map(frame, found.frames)),
                      found.more)

    def worker(found: Worker) -> Worker:
        dump = found.dump
        shown = Dump(dump.pid, text(dump.title), tuple(map(thread, dump.threads))) if dump is not None else None
        return Worker(text(found.name), text(found.cls), found.pid, text(found.pod), text(found.node), shown)

    return Stacks(text(stacks.job), text(stacks.source),
                  [Group(text(g.cls), tuple(map(frame, g.frames)), tuple(map(worker, g.workers)),
                         tuple(map(thread, g.threads)), g.more) for g in stacks.groups],
                  [Outlier(text(o.name), text(o.frame), text(o.reference), o.others) for o in stacks.outliers],
                  [PodError(text(e.pod), text(e.reason, REASON_CHARS)) for e in stacks.errors])


def differing(frames: Sequence[Frame], reference: Sequence[Frame]) -> tuple[str, str]:
    """The first frame, from the outermost call in, where `frames` leaves `reference`, and the reference's frame
    there (a stack that is the other's prefix: its innermost frame)."""
    ours, theirs = list(reversed(frames)), list(reversed(reference))
    for depth in range(max(len(ours), len(theirs))):
        mine = ours[depth] if depth < len(ours) else None
        other = theirs[depth] if depth < len(theirs) else None
        if mine is None or other is None or mine.key != other.key:
            return (str(mine if mine is not None else ours[-1]) if ours else "(no Python frame)",
                    str(other if other is not None else theirs[-1]) if theirs else "(no Python frame)")
    return (str(ours[0]) if ours else "(no Python frame)", str(theirs[0]) if theirs else "(no Python frame)")


def _short(frame: str) -> str:
    """`func (path/to/file.py:88)` as `func (file.py:88)`."""
    function, _, where = frame.partition(" (")
    return f"{function} ({where.rpartition('/')[2]}" if where else frame


def _function(frame: str) -> str:
    return frame.partition(" (")[0].rpartition(".")[2]


def outlier_line(outlier: Outlier) -> str:
    """`ActorGroup:5 is elsewhere: next_batch (loader.py:88); 7 ranks wait in allreduce`."""
    ranks = "1 rank waits" if outlier.others == 1 else f"{outlier.others} ranks wait"
    return f"{outlier.name} is elsewhere: {_short(outlier.frame)}; {ranks} in {_function(outlier.reference)}"


def summary(stacks: Stacks) -> str:
    """The outliers in one line (for an alert's evidence), else how the ranks stand."""
    if stacks.outliers:
        return "; ".join(outlier_line(o) for o in stacks.outliers[:3]) + \
            (f" (+{len(stacks.outliers) - 3} more)" if len(stacks.outliers) > 3 else "")
    if stacks.groups:
        top = stacks.groups[0]
        where = _short(str(top.frames[0])) if top.frames else "no Python frame"
        return f"all {top.count} ranks of {top.cls} are in {where}"
    if stacks.errors:
        first = stacks.errors[0]
        return f"no stack could be taken: {first.pod}: {first.reason}"
    return "no live Ray worker"


def to_json(stacks: Stacks) -> dict:
    return {
        "job": stacks.job, "source": stacks.source,
        "groups": [{"count": g.count, "class": g.cls,
                    "frames": [str(f) for f in g.frames] + [f"[{t.name or t.ident}] {f}" for t in g.threads
                                                            for f in t.frames],
                    "workers": [{"name": w.name, "pid": w.pid, "pod": w.pod, "node": w.node} for w in g.workers]}
                   for g in stacks.groups],
        "outliers": [{"name": o.name, "frame": o.frame} for o in stacks.outliers],
        "errors": [{"pod": e.pod, "reason": e.reason} for e in stacks.errors],
    }


def _names(workers: Sequence[Worker]) -> str:
    shown = ", ".join(w.name for w in workers[:8])
    return shown + (f" and {len(workers) - 8} more" if len(workers) > 8 else "")


TITLE, OUTLIER, GROUP, FRAME, THREAD, ERROR, NOTE, BLANK = \
    "title", "outlier", "group", "frame", "thread", "error", "note", "blank"
"""What each line of render_lines is, for a screen to style."""


def render_lines(stacks: Stacks) -> list[tuple[str, str]]:
    """`rlark stacks`' lines, each with what it is: the title, the outliers, then each group (largest first) with
    its frames and (with all threads) its other threads, then why a Pod gave no stack."""
    lines = [(TITLE, f"stacks of {stacks.job} (from {stacks.source})")]
    lines += [(OUTLIER, outlier_line(o)) for o in stacks.outliers[:MAX_OUTLIERS_SHOWN]]
    if len(stacks.outliers) > MAX_OUTLIERS_SHOWN:
        lines.append((NOTE, f"… {len(stacks.outliers) - MAX_OUTLIERS_SHOWN:,} more ranks elsewhere (-o json lists "
                            "them)"))
    for each in stacks.groups[:MAX_GROUPS_SHOWN]:
        lines += [(BLANK, ""), (GROUP, f"{each.count} × {each.cls}: {_names(each.workers)}")]
        lines += [(FRAME, f"    {f}") for f in each.frames] or [(FRAME, "    (no Python frame)")]
        lines += [(NOTE, f"    … {each.more:,} more frames")] if each.more else []
        for thread in each.threads:
            lines.append((THREAD, f"  thread {thread.name or thread.ident} ({thread.state})"))
            lines += [(FRAME, f"    {f}") for f in thread.frames]
            lines += [(NOTE, f"    … {thread.more:,} more frames")] if thread.more else []
    left = stacks.groups[MAX_GROUPS_SHOWN:]
    if left:
        lines += [(BLANK, ""), (NOTE, f"… {len(left):,} more groups of {sum(g.count for g in left):,} ranks (-o json "
                                      "lists them)")]
    if stacks.errors:
        lines.append((BLANK, ""))
        lines += [(ERROR, f"{e.pod}: {e.reason}") for e in stacks.errors]
    if not stacks.groups and not stacks.errors:
        lines.append((NOTE, "no live Ray worker"))
    return lines


def render(stacks: Stacks) -> str:
    """The text `rlark stacks` prints (render_lines)."""
    return "\n".join(text for _, text in render_lines(stacks))


PY_SPY_MISSING = ("py-spy is not in the Pod's image (it ships with ray[default]: pip install 'ray[default]' or "
                  "py-spy in the image), or set RAY_DASHBOARD_ENABLE_PROFILING=1 on the Header role so Ray's "
                  "dashboard takes stacks")
PTRACE_REFUSED = ("py-spy was refused ptrace: add securityContext.capabilities.add: [SYS_PTRACE] to the "
                  "containers (a debuggable Job), or set RAY_DASHBOARD_ENABLE_PROFILING=1 on the Header role")


PROFILING_OFF = "Profiling is disabled"
"""How Ray's `/worker/traceback` starts its answer on a head without RAY_DASHBOARD_ENABLE_PROFILING."""


def traceback_failure(answer: str) -> str:
    """Why Ray's `/worker/traceback` gave no stack (its answer, or the error reading it), in one line with how to
    enable it."""
    text = answer.lower()
    if PROFILING_OFF.lower() in text:
        return ("Ray's dashboard has profiling off: set RAY_DASHBOARD_ENABLE_PROFILING=1 on the Header role (a "
                "debuggable Job)")
    if "py-spy is not installed" in text:
        return "Ray's dashboard found no py-spy on the worker's node (it ships with ray[default])"
    last = next((line.strip() for line in reversed(answer.splitlines()) if line.strip()), "")
    return f"Ray's /worker/traceback gave no stack: {last}" if last else "Ray's /worker/traceback was empty"


def dump_failure(exit_code: int | None, stdout: str, stderr: str) -> str:
    """Why a py-spy dump in a Pod gave no stack, in one line with how to enable it."""
    text = f"{stderr}\n{stdout}".lower()
    if exit_code == 127 or "not found" in text:
        return PY_SPY_MISSING
    if "permission denied" in text or "operation not permitted" in text or "ptrace" in text:
        return PTRACE_REFUSED
    if exit_code is None:
        return "py-spy did not answer in time"
    if "no such process" in text or "failed to find python" in text:
        return "the process ended before py-spy read it"
    last = next((line.strip() for line in reversed(f"{stdout}\n{stderr}".splitlines()) if line.strip()), "")
    return f"py-spy failed ({exit_code}): {last}" if last else f"py-spy failed ({exit_code})"
