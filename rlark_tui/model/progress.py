"""Training progress and metric series read from a Header Pod's log: RLinf's embodied metric tables and the
reasoning runners' tqdm `Global Step` bar (rlinf-runtime.md §2.4), as pure functions over timestamped lines.

Input lines are (epoch seconds or None, text) pairs; a text may hold `\\r` redraws (only the last one counts).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

TABLE_PROGRESS = re.compile(r"│ Global Step:\s*(\d+)/(\d+) │(?:.*?│\s*([\d.]+)%)?")
TABLE_TIME = re.compile(r"│ Elapsed: (\S+) │ ETA: (\S+) │ Step Time: ([\d.]+)s")
TABLE_TITLE = " Metric Table "
TABLE_SECTION = re.compile(r"^├─+ (.+?) ─+┤")
TABLE_END = "╰"
TQDM = re.compile(r"Global Step:\s+(\d+)%\|[^|]*\|\s*(\d+)/(\d+) \[([^\]]*)\]")
CELL = re.compile(r"^\s*([^=│]+?)=(\S+)\s*$")
SECTION_PREFIX = {"Time": "time/", "Environment": "env/", "Rollout": "rollout/", "Evaluation": "eval/",
                  "Training/Actor": "train/", "Training/Critic": "train/critic/"}
"""Log section -> TensorBoard tag prefix where the mapping is certain (the actor section keeps `actor/`)."""
STALE_FACTOR = 3.0

Line = tuple[float | None, str]
Point = tuple[float, int, float]
"""[wall_time, step, value], TensorBoard's own shape."""


@dataclass(frozen=True)
class Progress:
    step: int
    total: int
    percent: float
    eta_seconds: float | None = None
    step_seconds: float | None = None
    at: float | None = None
    """Epoch seconds of the log line the row came from (None when the log had no timestamps)."""
    kind: str = "table"
    """table (embodied metric table) or tqdm (reasoning bar)."""

    def stale(self, now: float) -> bool:
        """No newer row for longer than 3x the step time."""
        if self.at is None or not self.step_seconds or self.step >= self.total:
            return False
        return now - self.at > STALE_FACTOR * self.step_seconds

    def render(self, now: float | None = None) -> str:
        """`12/40 30% ETA 00:28`, with `(stale)` when no new row came in time."""
        text = f"{self.step}/{self.total} {self.percent:.0f}%"
        if self.eta_seconds is not None and self.step < self.total:
            text += f" ETA {clock(self.eta_seconds)}"
        if now is not None and self.stale(now):
            text += " (stale)"
        return text


@dataclass(frozen=True)
class ProgressState:
    """What the reconciler last knew of a Running Job's progress: the newest row found (kept when a later read
    finds none) and the error of the latest read, if it failed."""
    row: Progress | None = None
    error: str = ""

    def render(self, now: float) -> str:
        if self.row is not None:
            return self.row.render(now)
        return "?" if self.error else ""


@dataclass
class Series:
    """Per tag, points in log order; `partial` says the log ended inside a table (that table is left out)."""
    points: dict[str, list[Point]] = field(default_factory=dict)
    partial: bool = False
    tables: int = 0

    def add(self, tag: str, point: Point) -> None:
        self.points.setdefault(tag, []).append(point)


def clock_seconds(text: str) -> float | None:
    """`MM:SS`, `HH:MM:SS` or `D days, HH:MM:SS`-free tqdm times as seconds; None when unreadable (`?`)."""
    parts = text.strip().split(":")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        return None
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return seconds


def clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours:d}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


def _last_segment(text: str) -> str:
    if "\r" not in text:
        return text
    for segment in reversed(text.split("\r")):
        if segment.strip():
            return segment
    return ""


def _number(text: str) -> float | None:
    try:
        return float(text.rstrip("s,"))
    except ValueError:
        return None


def _tqdm_rate(inner: str) -> float | None:
    """Seconds per step from tqdm's `[elapsed<remaining, 1.23s/it, ...]` or `4.56it/s`."""
    for part in inner.split(","):
        part = part.strip()
        if part.endswith("s/it"):
            return _number(part[:-4])
        if part.endswith("it/s"):
            rate = _number(part[:-4])
            return 1 / rate if rate else None
    return None


def _tqdm_postfix(inner: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for part in inner.split(",")[2:]:
        name, eq, raw = part.strip().partition("=")
        value = _number(raw) if eq else None
        if name and value is not None:
            values[name] = value
    return values


def _tqdm_progress(match: re.Match, at: float | None) -> Progress:
    step, total = int(match.group(2)), int(match.group(3))
    inner = match.group(4)
    times = inner.split(",")[0].split("<")
    eta = clock_seconds(times[1]) if len(times) == 2 else None
    step_seconds = _tqdm_postfix(inner).get("step_time") or _tqdm_rate(inner)
    percent = 100.0 * step / total if total else float(match.group(1))
    return Progress(step, total, percent, eta, step_seconds, at, "tqdm")


def latest_progress(lines: Iterable[Line]) -> Progress | None:
    """The newest progress row: an embodied table's `Global Step: n/N` row (with the time row after it) or
    the last redraw of a tqdm `Global Step` bar."""
    found: Progress | None = None
    pending: Progress | None = None
    for at, raw in lines:
        text = _last_segment(raw)
        if "Global Step" in text:
            match = TABLE_PROGRESS.search(text)
            if match:
                step, total = int(match.group(1)), int(match.group(2))
                percent = float(match.group(3)) if match.group(3) else (100.0 * step / total if total else 0.0)
                found = pending = Progress(step, total, percent, at=at)
                continue
            match = TQDM.search(text)
            if match:
                found, pending = _tqdm_progress(match, at), None
                continue
        if pending is not None and "Elapsed:" in text:
            match = TABLE_TIME.search(text)
            if match:
                found = Progress(pending.step, pending.total, pending.percent, clock_seconds(match.group(2)),
                                 float(match.group(3)), pending.at)
            pending = None
    return found


def metric_series(lines: Iterable[Line]) -> Series:
    """Every complete metric table's `name=value` cells and every tqdm bar's postfix, per tag as
    [wall_time, step, value]. Table names get their section's tag prefix where certain; truncated names
    (`…`) and unknown sections keep the log's own name. A table cut off at the end is left out (`partial`)."""
    series = Series()
    table: dict[str, float] | None = None
    step, at, prefix, truncated = 0, 0.0, "", False
    last_tqdm: tuple[int, float] | None = None
    for stamp, raw in lines:
        text = _last_segment(raw)
        if TABLE_TITLE in text and text.lstrip().startswith("╭"):
            table, step, at, prefix = {}, 0, stamp or 0.0, ""
            continue
        if table is not None:
            if text.lstrip().startswith(TABLE_END):
                if step:
                    for tag, value in table.items():
                        series.add(tag, (at, step, value))
                    series.tables += 1
                table = None
                continue
            match = TABLE_PROGRESS.search(text)
            if match:
                step = int(match.group(1))
                continue
            match = TABLE_SECTION.match(text.strip())
            if match:
                prefix = SECTION_PREFIX.get(match.group(1), "")
                truncated = match.group(1) not in SECTION_PREFIX
                continue
            if text.lstrip().startswith("│") and "=" in text:
                for cell in text.strip().strip("│").split("│"):
                    cell_match = CELL.match(cell)
                    if not cell_match:
                        continue
                    name, value = cell_match.group(1).strip(), _number(cell_match.group(2))
                    if value is None:
                        continue
                    certain = not truncated and "…" not in name and prefix
                    table[(prefix + name) if certain else name] = value
            continue
        if "Global Step" in text:
            match = TQDM.search(text)
            if match:
                count = int(match.group(2))
                if last_tqdm and last_tqdm[0] == count:
                    continue
                last_tqdm = (count, stamp or 0.0)
                for name, value in _tqdm_postfix(match.group(4)).items():
                    series.add(name, (stamp or 0.0, count, value))
    series.partial = table is not None
    return series


def finite(points: list[Point]) -> list[Point]:
    """The points whose value is a real number (NaN and inf left out)."""
    return [p for p in points if math.isfinite(p[2])]
