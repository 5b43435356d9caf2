"""Training progress and metric series read from a Header Pod's log: RLinf's embodied metric tables and the
reasoning runners' tqdm `Global Step` bar (rlinf-runtime.md §2.4), as pure functions over timestamped lines.

Input lines are (epoch seconds or None, text) pairs. The table is RLinf's `print_metrics_table` layout: a plain
top border, a `├── Metric Table ──┤` title row, the Global Step and time rows, per section a title row, a blank
row, rows of three `name=value` cells and a blank row, then the bottom border. A tqdm bar never ends its line
while it runs: one text holds every `\\r` redraw so far, and may end inside a redraw (a log API hands out an
unterminated line in 16 KiB pieces); the last redraw that parses wins. A redraw's time is the line's timestamp
(when its first piece was written) plus the bar's elapsed time since the line's first redraw.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import MappingProxyType

from rlark_tui.text.parse import ascii_float, ascii_int

TABLE_PROGRESS = re.compile(r"│ Global Step:\s*(\d+)/(\d+) │(?:.*?│\s*([\d.]+)%)?")
TABLE_TIME = re.compile(r"│ Elapsed: (\S+) │ ETA: (\S+) │ Step Time: ([\d.]+)s")
TABLE_TITLE = " Metric Table "
TABLE_TITLE_ROW = re.compile(r"^[├╭]─+ Metric Table ─+[┤╮]$")
TABLE_SECTION = re.compile(r"^├─+ (.+?) ─+┤")
TABLE_END = "╰"
TQDM = re.compile(r"Global Step:\s+(\d+)%\|[^|]*\|\s*(\d+)/(\d+) \[([^\]]*)\]")
CELL = re.compile(r"^\s*+([^=│]+?)=(\S+)\s*$")
SECTION_PREFIX = MappingProxyType({"Time": "time/", "Environment": "env/", "Rollout": "rollout/", "Evaluation": "eval/",
                  "Training/Actor": "train/", "Training/Critic": "train/", "Training/Other": "train/"})
"""Log section -> TensorBoard tag prefix where the mapping is certain: RLinf drops the category from the name
but the actor and critic sections keep `actor/` and `critic/`. Replay Buffer names come from `replay_buffer/`
or `train/replay_buffer/` keys alike, so they keep the log's own name."""
STALE_FACTOR = 3.0

Line = tuple[float | None, str]
_TB_NON_FINITE = MappingProxyType({"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf})
_NON_FINITE = frozenset({"nan", "-nan", "inf", "-inf", "+inf", "infinity", "-infinity"})
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
    finds none), the error of the latest read, if it failed, and when that read was made (epoch seconds)."""
    row: Progress | None = None
    error: str = ""
    read_at: float | None = None

    def render(self, now: float) -> str:
        """The row as of the read: between two reads (10 s apart) a row that was fresh when read is not called
        stale because the clock moved on; one the read found older than 3x the step time is."""
        if self.row is not None:
            return self.row.render(now if self.read_at is None else min(now, self.read_at))
        return "?" if self.error else ""


MAX_TAGS = 256
"""The most series read of a run, from TensorBoard (cluster/metrics: each is a request) or the Header log: the Job's
code names its tags, and a log's table of 200,000 cells was 200,000 series at every Metrics poll, 5.8 s of the UI
thread to open the Metrics tab and 2.9 s for its Time view."""


@dataclass
class Series:
    """Per tag, points in log order; `partial` says the log ended inside a table (that table is left out). At most
    MAX_TAGS tags, the first the log names (`more_tags` says it named more), or only those `wanted`."""
    points: dict[str, list[Point]] = field(default_factory=dict)
    partial: bool = False
    tables: int = 0
    more_tags: bool = False
    wanted: frozenset[str] | None = None

    def add(self, tag: str, point: Point) -> None:
        found = self.points.get(tag)
        if found is None:
            if self.wanted is not None and tag not in self.wanted:
                return
            if len(self.points) >= MAX_TAGS:
                self.more_tags = True
                return
            found = self.points[tag] = []
        found.append(point)


def clock_seconds(text: str) -> float | None:
    """`MM:SS`, `HH:MM:SS` or `D days, HH:MM:SS`-free tqdm times as seconds; None when unreadable (`?`)."""
    parts = text.strip().split(":")
    if not 2 <= len(parts) <= 3:
        return None
    seconds = 0.0
    for part in parts:
        number = ascii_int(part)
        if number is None:
            return None
        seconds = seconds * 60 + number
    return seconds


def clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours:d}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


def _redraws(text: str) -> list[str]:
    """The non-blank `\\r` redraws of a line, in order."""
    return [segment for segment in text.split("\r") if segment.strip()] if "\r" in text else [text]


def _last_tqdm(text: str) -> re.Match | None:
    """The last redraw of a line that is a whole tqdm `Global Step` bar (a cut-off last redraw is skipped)."""
    for segment in reversed(_redraws(text)):
        match = TQDM.search(segment)
        if match:
            return match
    return None


def _tqdm_times(inner: str) -> tuple[float | None, float | None]:
    """(elapsed, remaining) seconds from tqdm's `[elapsed<remaining, rate, postfix]`."""
    times = inner.split(",")[0].split("<")
    elapsed = clock_seconds(times[0])
    return elapsed, clock_seconds(times[1]) if len(times) == 2 else None


def _first_elapsed(text: str) -> float | None:
    """The bar's elapsed time at the first whole redraw of a line: the redraw nearest the line's timestamp."""
    for segment in _redraws(text):
        match = TQDM.search(segment)
        if match:
            return _tqdm_times(match.group(4))[0]
    return None


def _tqdm_at(stamp: float | None, inner: str, base: float | None) -> float | None:
    """A redraw's time: the line's timestamp (when the runtime wrote the line's first piece, which holds its
    first redraw) plus the bar's elapsed time since that first redraw. A read that starts inside the line (a
    tail or since read) has a later timestamp and a later first redraw alike."""
    elapsed = _tqdm_times(inner)[0]
    if stamp is None or elapsed is None:
        return stamp
    return stamp + max(0.0, elapsed - (base or 0.0))


def _number(text: str) -> float | None:
    """A metric's value: an ASCII decimal, or nan and inf as Python prints them (kept in the series, then left
    out by `finite`); anything else (`.`, `²`, 400 digits) none."""
    text = text.rstrip("s,")
    return float(text) if text.lower() in _NON_FINITE else ascii_float(text)


def _seconds(value: float | None) -> float | None:
    """A time or rate that is a finite number, else none (a nan step time would never be stale)."""
    return value if value is not None and math.isfinite(value) else None


def _tqdm_rate(inner: str) -> float | None:
    """Seconds per step from tqdm's `[elapsed<remaining, 1.23s/it, ...]` or `4.56it/s`."""
    for part in inner.split(","):
        part = part.strip()
        if part.endswith("s/it"):
            return _seconds(_number(part[:-4]))
        if part.endswith("it/s"):
            rate = _seconds(_number(part[:-4]))
            return _seconds(1 / rate) if rate else None
    return None


def _tqdm_postfix(inner: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for part in inner.split(",")[2:]:
        name, eq, raw = part.strip().partition("=")
        value = _number(raw) if eq else None
        if name and value is not None:
            values[name] = value
    return values


def _tqdm_progress(match: re.Match, stamp: float | None, base: float | None) -> Progress | None:
    step, total = ascii_int(match.group(2)), ascii_int(match.group(3))
    if step is None or total is None:
        return None
    inner = match.group(4)
    eta = _tqdm_times(inner)[1]
    at = _tqdm_at(stamp, inner, base)
    step_seconds = _seconds(_tqdm_postfix(inner).get("step_time")) or _tqdm_rate(inner)
    percent = 100.0 * step / total if total else ascii_float(match.group(1)) or 0.0
    return Progress(step, total, percent, eta, step_seconds, at, "tqdm")


def latest_progress(lines: Iterable[Line]) -> Progress | None:
    """The newest progress row: an embodied table's `Global Step: n/N` row (with the time row after it) or
    the last redraw of a tqdm `Global Step` bar."""
    found: Progress | None = None
    pending: Progress | None = None
    for at, raw in lines:
        if "Global Step" in raw:
            tqdm = _last_tqdm(raw) if "%|" in raw else None
            bar = _tqdm_progress(tqdm, at, _first_elapsed(raw)) if tqdm is not None else None
            if bar is not None:
                found, pending = bar, None
                continue
            match = TABLE_PROGRESS.search(raw)
            step, total = (ascii_int(match.group(1)), ascii_int(match.group(2))) if match else (None, None)
            if match is not None and step is not None and total is not None:
                percent = (ascii_float(match.group(3)) if match.group(3) else None) \
                    or (100.0 * step / total if total else 0.0)
                found = pending = Progress(step, total, percent, at=at)
                continue
        if pending is not None and "Elapsed:" in raw:
            match = TABLE_TIME.search(raw)
            if match:
                found = Progress(pending.step, pending.total, pending.percent, clock_seconds(match.group(2)),
                                 ascii_float(match.group(3)), pending.at)
            pending = None
    return found


def scalar_points(items: object) -> list[Point]:
    """TensorBoard's scalars answer, `[[wall_time, step, value], ...]`, as points: a wall time and step that are
    finite numbers (the step a whole one) and a value that is a number, or NaN or ±inf as TensorBoard spells them
    in JSON ("NaN", "Infinity", "-Infinity": its json_util.Cleanse; the decoder keeps a bare NaN as that text too),
    kept as the log's are for `finite` to leave out and the plot to count; anything else is left out."""
    points: list[Point] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, list) or len(item) != 3:
            continue
        wall, step, value = item
        value = _TB_NON_FINITE.get(value, value) if isinstance(value, str) else value
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (wall, step, value)):
            continue
        if math.isfinite(wall) and math.isfinite(step) and step == int(step):
            points.append((float(wall), int(step), float(value)))
    return points


def metric_series(lines: Iterable[Line], tags: Iterable[str] | None = None) -> Series:
    """Every complete metric table's `name=value` cells and every tqdm bar's postfix, per tag as
    [wall_time, step, value] (the first MAX_TAGS tags, or only `tags` when given). Table names get their section's
    tag prefix where certain; truncated names (`…`) and unknown sections keep the log's own name. A table cut off at
    the end is left out (`partial`)."""
    series = Series(wanted=frozenset(tags) if tags else None)
    table: dict[str, float] | None = None
    step, at, prefix, truncated = 0, 0.0, "", False
    last_tqdm: int | None = None
    for stamp, raw in lines:
        text = raw.strip()
        if TABLE_TITLE in text and TABLE_TITLE_ROW.match(text):
            table, step, at, prefix = {}, 0, stamp or 0.0, ""
            continue
        if table is not None:
            if text.startswith(TABLE_END):
                if step:
                    for tag, value in table.items():
                        series.add(tag, (at, step, value))
                    series.tables += 1
                table = None
                continue
            match = TABLE_PROGRESS.search(text)
            if match:
                step = ascii_int(match.group(1)) or 0
                continue
            match = TABLE_SECTION.match(text)
            if match:
                prefix = SECTION_PREFIX.get(match.group(1), "")
                truncated = match.group(1) not in SECTION_PREFIX
                continue
            if text.startswith("│") and "=" in text:
                for cell in text.strip("│").split("│"):
                    cell_match = CELL.match(cell)
                    if not cell_match:
                        continue
                    name, number = cell_match.group(1).strip(), _number(cell_match.group(2))
                    if number is None:
                        continue
                    certain = not truncated and "…" not in name and prefix
                    table[(prefix + name) if certain else name] = number
            continue
        if "Global Step" in raw and "%|" in raw:
            base = _first_elapsed(raw)
            for segment in _redraws(raw):
                match = TQDM.search(segment)
                if not match:
                    continue
                count = ascii_int(match.group(2))
                if count is None or last_tqdm == count:
                    continue
                last_tqdm = count
                when = _tqdm_at(stamp, match.group(4), base) or 0.0
                for name, value in _tqdm_postfix(match.group(4)).items():
                    series.add(name, (when, count, value))
    series.partial = table is not None
    return series


def finite(points: list[Point]) -> list[Point]:
    """The points whose value is a real number (NaN and inf left out)."""
    return [p for p in points if math.isfinite(p[2])]
