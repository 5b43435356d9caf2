"""Container logs of data-plane pods, written and served as a CRI runtime and the kubelet do.

Layout: `<root>/<cluster>/<namespace>/<pod>/<container>/<instance>.log`, instance 0, 1, 2 ... (a container
restart starts the next instance; the one before it is "previous"). Files are 0600 in 0700 directories.
`<instance>.exit` holds the exit code once that instance has ended (a follow then stops).

Writing follows containerd's CRI logger (`internal/cri/io/logger.go`, `NewCRILogger` / `redirectLogs`): each entry
is one file line `<RFC3339Nano time> <stdout|stderr> <P|F> <content>`, written with one `write(2)` as it is made
(nothing is held in this process, so a crash loses no entry). `F` ends a line (its `\\n`, or `\\r\\n`, dropped);
a line longer than MAX_LINE (containerd's `max_container_log_line_size`, 16 KiB) is cut into `P` entries of
exactly that size before its `F`, and output without a newline waits in the stream's buffer until a newline
comes or more than 16 KiB has gathered; output still unterminated when the stream ends is written as `P`. The
two streams are read on their own and their entries land in the order they are read.

Reading follows the kubelet (`pkg/kubelet/kuberuntime/logs/logs.go`, `ReadLogs` / `parseCRILog` /
`logWriter.write`): each entry's content is written, a `\\n` after an `F` entry and nothing after a `P` entry;
with `timestamps` the time of a line's first entry (RFC3339Nano with all nine digits) and a space precede the
line, continuation entries get none; `tail` counts entries from the end of the file, `since` compares each
entry's time, `limit_bytes` cuts the answer.

API (thread-safe; appends from any thread, readers read the file):
- `start_instance(cluster, namespace, pod, container) -> int`: begin a new instance (first call -> 0).
- `writer(cluster, namespace, pod, container) -> EntryWriter`: the runtime side for the current instance:
  `feed(stream, data)` as bytes arrive, `close()` when the container's streams end.
- `append(cluster, namespace, pod, container, text, when=None, stream="stdout")`: each line of `text` as a
  whole line (tests and fixtures).
- `end_instance(cluster, namespace, pod, container, exit_code)`: mark the current instance finished.
- `read_bytes(..., previous=False, tail=None, since=None, timestamps=False, limit_bytes=None) -> bytes`: the log
  API's answer; `read(...)` the same as lines of text (a last unterminated line included).
- `follow(..., tail=None, since=None, timestamps=False, limit_bytes=None, poll=0.1, stop=None)`: async
  iterator of the answer's pieces (bytes) as entries land, partial content included; it ends when that
  instance ends, the pod's logs are removed, or `stop()` returns True. `follow_lines(...)` yields whole lines only (a test's view).
- `streams`: the open follows and how far each has read (rlark_sandbox.streams.Streams, for tests to wait on).
- `instances(...) -> list[int]`, `remove_pod(cluster, namespace, pod)` (a deleted pod's logs go with it),
  `path(cluster, namespace, pod, container, instance)` for a writer that wants the file itself.
Raises `LogsNotFound` when the requested instance has no log.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from collections.abc import AsyncGenerator, Callable
from datetime import UTC, datetime
from pathlib import Path

from rlark_sandbox.streams import Streams

MAX_LINE = 16 * 1024
"""containerd's `max_container_log_line_size` default: the most content one entry carries."""
STREAMS = ("stdout", "stderr")
FILE_MODE = 0o600
DIR_MODE = 0o700


class LogsNotFound(Exception):
    """The container instance asked for has no log (never started, or no previous instance)."""


def format_ts(when: datetime) -> str:
    """RFC 3339 with all nine fraction digits, UTC: the kubelet's output form (RFC3339NanoFixed)."""
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond * 1000:09d}Z"


def runtime_ts(ns: int) -> str:
    """Go's RFC3339Nano of an epoch-nanosecond time in UTC, as containerd stamps entries (trailing zeros of the
    fraction dropped, no fraction at all on a whole second)."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    fraction = f"{nanos:09d}".rstrip("0")
    return f"{base}.{fraction}Z" if fraction else f"{base}Z"


def parse_ts(text: str) -> datetime:
    head, _, frac = text.rstrip("Z").partition(".")
    base = datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return base.replace(microsecond=int((frac or "0")[:6].ljust(6, "0")))


def _ns(text: str) -> int | None:
    """Epoch nanoseconds of an entry's RFC3339Nano time (UTC `Z`, any number of fraction digits), else None."""
    if len(text) < 20 or text[-1] != "Z" or text[4] != "-" or text[10] != "T":
        return None
    head, _, frac = text[:-1].partition(".")
    if frac and not frac.isdigit():
        return None
    seconds = _whole_seconds(head)
    return None if seconds is None else seconds * 1_000_000_000 + int(frac.ljust(9, "0")[:9] or "0")


_SECONDS: dict[str, int] = {}


def _whole_seconds(head: str) -> int | None:
    """`YYYY-MM-DDTHH:MM:SS` -> epoch seconds, cached: consecutive entries mostly share their second."""
    found = _SECONDS.get(head)
    if found is None:
        try:
            found = int(datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp())
        except ValueError:
            return None
        if len(_SECONDS) > 4096:
            _SECONDS.clear()
        _SECONDS[head] = found
    return found


def _fixed(stamp: bytes) -> bytes:
    """An entry's time with all nine fraction digits (the kubelet's RFC3339NanoFixed output)."""
    head, dot, frac = stamp[:-1].partition(b".")
    return head + b"." + frac.ljust(9, b"0") + b"Z"


class Renderer:
    """The kubelet's logWriter over the file's lines: since, timestamps at line starts, limitBytes."""

    def __init__(self, since: datetime | None, timestamps: bool, limit_bytes: int | None) -> None:
        self.since = None if since is None else (
            int(since.replace(microsecond=0).timestamp()) * 1_000_000_000 + since.microsecond * 1000)
        self.timestamps = timestamps
        self.remain = limit_bytes if limit_bytes is not None and limit_bytes >= 0 else None
        self.line_start = True

    @property
    def done(self) -> bool:
        return self.remain is not None and self.remain <= 0

    def render(self, lines: list[bytes]) -> bytes:
        """What the log API writes for these file lines (lines that are no CRI entry are skipped)."""
        parts = []
        since, timestamps = self.since, self.timestamps
        for line in lines:
            if self.done:
                break
            fields = line.split(b" ", 3)
            if len(fields) != 4 or fields[1] not in (b"stdout", b"stderr") or fields[0][-1:] != b"Z":
                continue
            stamp, _stream, tag, content = fields
            if since is not None:
                ns = _ns(stamp.decode("ascii", "replace"))
                if ns is None or ns < since:
                    continue
            full = tag != b"P" and not tag.startswith(b"P:")
            if full:
                content += b"\n"
            if timestamps and self.line_start:
                content = (stamp if len(stamp) == 30 else _fixed(stamp)) + b" " + content
            self.line_start = full
            if self.remain is not None:
                if len(content) > self.remain:
                    content = content[:self.remain]
                self.remain -= len(content)
            parts.append(content)
        return b"".join(parts)


def _split(content: bytes) -> list[bytes]:
    """A line's content as containerd writes it: `P` pieces of exactly MAX_LINE while more is left, then the rest."""
    pieces = []
    while len(content) > MAX_LINE:
        pieces.append(content[:MAX_LINE])
        content = content[MAX_LINE:]
    pieces.append(content)
    return pieces


class EntryWriter:
    """containerd's redirectLogs for both streams of one container instance into its log file."""

    def __init__(self, path: Path, lock: threading.Lock) -> None:
        self.path = path
        self._lock = lock
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        self._pending = {stream: b"" for stream in STREAMS}

    def _write(self, stream: str, tag: str, contents: list[bytes], ns: int | None = None) -> None:
        stamp = runtime_ts(ns if ns is not None else time.time_ns())
        head = f"{stamp} {stream} ".encode()
        if len(contents) > 1:
            data = b"".join(head + b"P " + piece + b"\n" for piece in contents[:-1])
            data += head + tag.encode() + b" " + contents[-1] + b"\n"
        else:
            data = head + tag.encode() + b" " + contents[0] + b"\n"
        with self._lock:
            os.write(self._fd, data)

    def feed(self, stream: str, data: bytes) -> None:
        """Bytes read from the container's `stream`: every line they end, and 16 KiB pieces of a long
        unterminated one, are written at once; the rest waits for more."""
        buffer = self._pending[stream] + data
        lines = buffer.split(b"\n")
        buffer = lines.pop()
        for line in lines:
            self._write(stream, "F", _split(line[:-1] if line.endswith(b"\r") else line))
        if len(buffer) > MAX_LINE:
            pieces = _split(buffer)
            buffer = pieces.pop()
            self._write(stream, "P", pieces)
        self._pending[stream] = buffer

    def entry(self, stream: str, content: bytes, ns: int | None = None) -> None:
        """One whole line, given at once (split as a long line is)."""
        self._write(stream, "F", _split(content), ns)

    def close(self) -> None:
        """The streams ended: output still without a newline is written as a `P` entry."""
        for stream in STREAMS:
            if self._pending[stream]:
                self._write(stream, "P", [self._pending[stream]])
                self._pending[stream] = b""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _private_dirs(root: Path, directory: Path) -> None:
    """`directory` and its parents below `root` created 0700."""
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    current = directory
    while current != root and root in current.parents:
        os.chmod(current, DIR_MODE)
        current = current.parent


class LogStore:
    def __init__(self, root: Path | str, streams: Streams | None = None):
        self.root = Path(root)
        self.streams = streams if streams is not None else Streams()
        """Where each follow says it is open and how far it has read (rlark_sandbox.streams, for tests)."""
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()

    def _dir(self, cluster: str, namespace: str, pod: str, container: str) -> Path:
        return self.root / cluster / namespace / pod / container

    def path(self, cluster: str, namespace: str, pod: str, container: str, instance: int) -> Path:
        return self._dir(cluster, namespace, pod, container) / f"{instance}.log"

    def instances(self, cluster: str, namespace: str, pod: str, container: str) -> list[int]:
        directory = self._dir(cluster, namespace, pod, container)
        if not directory.is_dir():
            return []
        return sorted(int(p.stem) for p in directory.glob("*.log"))

    def _create(self, path: Path) -> None:
        self.root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        _private_dirs(self.root, path.parent)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE))

    def start_instance(self, cluster: str, namespace: str, pod: str, container: str) -> int:
        with self._lock:
            found = self.instances(cluster, namespace, pod, container)
            number = found[-1] + 1 if found else 0
            self._create(self.path(cluster, namespace, pod, container, number))
            return number

    def _current(self, cluster: str, namespace: str, pod: str, container: str) -> Path:
        with self._lock:
            found = self.instances(cluster, namespace, pod, container)
            path = self.path(cluster, namespace, pod, container, found[-1] if found else 0)
            if not found:
                self._create(path)
            return path

    def writer(self, cluster: str, namespace: str, pod: str, container: str) -> EntryWriter:
        return EntryWriter(self._current(cluster, namespace, pod, container), self._write_lock)

    def append(self, cluster: str, namespace: str, pod: str, container: str, text: str,
               when: datetime | None = None, stream: str = "stdout") -> None:
        ns = None
        if when is not None:
            when = when.astimezone(UTC)
            ns = int(when.replace(microsecond=0).timestamp()) * 1_000_000_000 + when.microsecond * 1000
        writer = self.writer(cluster, namespace, pod, container)
        try:
            for line in text.splitlines() or [""]:
                writer.entry(stream, line.encode("utf-8", "surrogateescape"), ns)
        finally:
            writer.close()

    def end_instance(self, cluster: str, namespace: str, pod: str, container: str, exit_code: int) -> None:
        with self._lock:
            found = self.instances(cluster, namespace, pod, container)
            if found:
                marker = self.path(cluster, namespace, pod, container, found[-1]).with_suffix(".exit")
                marker.write_text(str(exit_code))
                os.chmod(marker, FILE_MODE)

    def remove_pod(self, cluster: str, namespace: str, pod: str) -> None:
        with self._lock:
            shutil.rmtree(self.root / cluster / namespace / pod, ignore_errors=True)

    def _pick(self, cluster: str, namespace: str, pod: str, container: str, previous: bool) -> Path:
        found = self.instances(cluster, namespace, pod, container)
        if previous:
            # The instance before the current one, or the current one itself once it has exited and waits in
            # back-off to be restarted (restartCount has already counted that restart), as the kubelet answers.
            latest_ended = bool(found) and self.path(cluster, namespace, pod, container, found[-1]).with_suffix(
                ".exit").exists()
            candidates = found if latest_ended else found[:-1]
            if not candidates:
                raise LogsNotFound(f'previous terminated container "{container}" in pod "{pod}" not found')
            return self.path(cluster, namespace, pod, container, candidates[-1])
        if not found:
            raise LogsNotFound(f'container "{container}" in pod "{pod}" has no logs yet')
        return self.path(cluster, namespace, pod, container, found[-1])

    @staticmethod
    def _file_lines(path: Path) -> list[bytes]:
        """The file's complete lines (an entry still being written is not one yet)."""
        return _split_lines(path.read_bytes())

    def read_bytes(self, cluster: str, namespace: str, pod: str, container: str, *, previous: bool = False,
                   tail: int | None = None, since: datetime | None = None, timestamps: bool = False,
                   limit_bytes: int | None = None) -> bytes:
        """The log API's answer for the current (or previous) instance."""
        path = self._pick(cluster, namespace, pod, container, previous)
        lines = self._file_lines(path)
        if tail is not None:
            lines = lines[-tail:] if tail > 0 else []
        return Renderer(since, timestamps, limit_bytes).render(lines)

    def read(self, cluster: str, namespace: str, pod: str, container: str, *, previous: bool = False,
             tail: int | None = None, since: datetime | None = None, timestamps: bool = False) -> list[str]:
        """`read_bytes` as lines of text; a last unterminated line is kept as one."""
        data = self.read_bytes(cluster, namespace, pod, container, previous=previous, tail=tail, since=since,
                               timestamps=timestamps)
        return data.decode("utf-8", "replace").splitlines()

    def follow(self, cluster: str, namespace: str, pod: str, container: str, *, tail: int | None = None,
               since: datetime | None = None, timestamps: bool = False, limit_bytes: int | None = None,
               poll: float = 0.1, stop: Callable[[], bool] | None = None) -> AsyncGenerator[bytes]:
        """Raises LogsNotFound at once (not at the first iteration) when there is nothing to follow; `stop` is
        asked while waiting for new entries and ends the stream when it returns True. Yields non-empty pieces of
        the answer (partial content included), one per read of the file."""
        path = self._pick(cluster, namespace, pod, container, False)
        renderer = Renderer(since, timestamps, limit_bytes)
        return self._follow(path, (cluster, namespace, pod, container), tail, renderer, poll, stop)

    def follow_lines(self, cluster: str, namespace: str, pod: str, container: str, **options) -> AsyncGenerator[str]:
        """`follow` cut into whole lines of text (the last piece of a line waits for its end)."""
        return _lines(self.follow(cluster, namespace, pod, container, **options))

    async def _follow(self, path: Path, key: tuple[str, str, str, str], tail: int | None, renderer: Renderer,
                      poll: float, stop: Callable[[], bool] | None) -> AsyncGenerator[bytes]:
        with path.open("rb") as fh, self.streams.following(*key, path) as seen:
            first = fh.read()
            cut = first.rfind(b"\n") + 1
            pending = first[cut:]
            lines = _split_lines(first[:cut])
            if tail is not None:
                lines = lines[-tail:] if tail > 0 else []
            data = renderer.render(lines)
            if data:
                yield data
            exit_marker = path.with_suffix(".exit")
            while not renderer.done:
                chunk = fh.read()
                seen.read_to(fh.tell(), idle=not chunk)
                if chunk:
                    pending += chunk
                    cut = pending.rfind(b"\n") + 1
                    if cut:
                        data = renderer.render(_split_lines(pending[:cut]))
                        pending = pending[cut:]
                        if data:
                            yield data
                    continue
                if exit_marker.exists() or not path.exists():
                    return
                if self.instances(*key)[-1:] != [int(path.stem)] or (stop is not None and stop()):
                    return
                await asyncio.sleep(poll)


def _split_lines(data: bytes) -> list[bytes]:
    """The complete `\\n`-ended lines of `data` (content may hold `\\r`: bytes.splitlines would cut there)."""
    lines = data.split(b"\n")
    lines.pop()
    return lines


async def _lines(pieces: AsyncGenerator[bytes]) -> AsyncGenerator[str]:
    pending = b""
    try:
        async for piece in pieces:
            pending += piece
            *done, pending = pending.split(b"\n")
            for line in done:
                yield line.decode("utf-8", "replace")
    finally:
        await pieces.aclose()
