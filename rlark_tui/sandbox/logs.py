"""Container logs of data-plane pods: one file per container instance, each line prefixed with its timestamp.
The agent's runner (or a test) appends; the `pods/log` route and the gateway read tail / follow / previous / since.

Layout: `<root>/<cluster>/<namespace>/<pod>/<container>/<instance>.log`, instance 0, 1, 2 ... (a container
restart starts the next instance; the one before it is "previous"). A line is stored as
`<RFC3339 timestamp with nanoseconds> <text>\\n`, exactly what kubelet returns with `timestamps=true`.
`<instance>.exit` holds the exit code once that instance has ended (a follow then stops).

API (thread-safe; appends from any thread or process, readers poll the file):
- `start_instance(cluster, namespace, pod, container) -> int`: begin a new instance (first call -> 0).
- `append(cluster, namespace, pod, container, text, when=None)`: append the lines of `text` to the current
  instance (created as 0 if none); a trailing partial line is kept as its own line.
- `end_instance(cluster, namespace, pod, container, exit_code)`: mark the current instance finished.
- `read(..., previous=False, tail=None, since=None, timestamps=False) -> list[str]` (since = datetime, aware UTC).
- `follow(..., tail=None, since=None, timestamps=False, poll=0.1, stop=None)`: async iterator of lines; it ends
  when that instance ends, the pod's logs are removed, or `stop()` returns True. `follow_batches(...)` (same
  arguments) yields the same lines as lists, one list per read of the file (the HTTP route writes each list at
  once: a write per line costs a TLS record and a chunk each, which capped a 20,000 lines/s follow).
- `instances(...) -> list[int]`, `remove_pod(cluster, namespace, pod)` (a deleted pod's logs go with it),
  `path(cluster, namespace, pod, container, instance)` for a writer that wants the file itself.
Raises `LogsNotFound` when the requested instance has no log.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timezone
from pathlib import Path


class LogsNotFound(Exception):
    """The container instance asked for has no log (never started, or no previous instance)."""


def format_ts(when: datetime) -> str:
    when = when.astimezone(timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond * 1000:09d}Z"


def parse_ts(text: str) -> datetime:
    head, _, frac = text.rstrip("Z").partition(".")
    base = datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return base.replace(microsecond=int((frac or "0")[:6].ljust(6, "0")))


class LogStore:
    def __init__(self, root: Path | str):
        self.root = Path(root)
        self._lock = threading.Lock()

    def _dir(self, cluster: str, namespace: str, pod: str, container: str) -> Path:
        return self.root / cluster / namespace / pod / container

    def path(self, cluster: str, namespace: str, pod: str, container: str, instance: int) -> Path:
        return self._dir(cluster, namespace, pod, container) / f"{instance}.log"

    def instances(self, cluster: str, namespace: str, pod: str, container: str) -> list[int]:
        directory = self._dir(cluster, namespace, pod, container)
        if not directory.is_dir():
            return []
        return sorted(int(p.stem) for p in directory.glob("*.log"))

    def start_instance(self, cluster: str, namespace: str, pod: str, container: str) -> int:
        with self._lock:
            found = self.instances(cluster, namespace, pod, container)
            number = found[-1] + 1 if found else 0
            path = self.path(cluster, namespace, pod, container, number)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
            return number

    def append(self, cluster: str, namespace: str, pod: str, container: str, text: str,
               when: datetime | None = None) -> None:
        stamp = format_ts(when or datetime.now(timezone.utc))
        lines = text.splitlines() or [""]
        data = "".join(f"{stamp} {line}\n" for line in lines)
        with self._lock:
            found = self.instances(cluster, namespace, pod, container)
            path = self.path(cluster, namespace, pod, container, found[-1] if found else 0)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(data)

    def end_instance(self, cluster: str, namespace: str, pod: str, container: str, exit_code: int) -> None:
        with self._lock:
            found = self.instances(cluster, namespace, pod, container)
            if found:
                self.path(cluster, namespace, pod, container, found[-1]).with_suffix(".exit").write_text(
                    str(exit_code))

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
    def _render(raw: list[str], since: datetime | None, timestamps: bool) -> list[str]:
        out = []
        for line in raw:
            stamp, _, text = line.partition(" ")
            if since is not None and parse_ts(stamp) < since:
                continue
            out.append(line if timestamps else text)
        return out

    def read(self, cluster: str, namespace: str, pod: str, container: str, *, previous: bool = False,
             tail: int | None = None, since: datetime | None = None, timestamps: bool = False) -> list[str]:
        path = self._pick(cluster, namespace, pod, container, previous)
        raw = path.read_text(encoding="utf-8", errors="replace").splitlines()
        lines = self._render(raw, since, timestamps)
        if tail is not None:
            lines = lines[-tail:] if tail > 0 else []
        return lines

    def follow(self, cluster: str, namespace: str, pod: str, container: str, *, tail: int | None = None,
               since: datetime | None = None, timestamps: bool = False, poll: float = 0.1,
               stop: Callable[[], bool] | None = None) -> AsyncIterator[str]:
        """Raises LogsNotFound at once (not at the first iteration) when there is nothing to follow; `stop` is
        asked while waiting for new lines and ends the stream when it returns True."""
        batches = self.follow_batches(cluster, namespace, pod, container, tail=tail, since=since,
                                      timestamps=timestamps, poll=poll, stop=stop)
        return _flatten(batches)

    def follow_batches(self, cluster: str, namespace: str, pod: str, container: str, *, tail: int | None = None,
                       since: datetime | None = None, timestamps: bool = False, poll: float = 0.1,
                       stop: Callable[[], bool] | None = None) -> AsyncIterator[list[str]]:
        """`follow`, one non-empty list of lines per read."""
        path = self._pick(cluster, namespace, pod, container, False)
        return self._follow(path, (cluster, namespace, pod, container), tail, since, timestamps, poll, stop)

    async def _follow(self, path: Path, key: tuple[str, str, str, str], tail: int | None, since: datetime | None,
                      timestamps: bool, poll: float, stop: Callable[[], bool] | None) -> AsyncIterator[list[str]]:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            first = fh.read()
            complete, _, pending = first.rpartition("\n") if "\n" in first else ("", "", first)
            lines = self._render(complete.splitlines(), since, timestamps)
            if tail is not None:
                lines = lines[-tail:] if tail > 0 else []
            if lines:
                yield lines
            exit_marker = path.with_suffix(".exit")
            while True:
                chunk = fh.read()
                if chunk:
                    pending += chunk
                    *done, pending = pending.split("\n")
                    lines = self._render(done, since, timestamps)
                    if lines:
                        yield lines
                    continue
                if exit_marker.exists() or not path.exists():
                    return
                if self.instances(*key)[-1:] != [int(path.stem)] or (stop is not None and stop()):
                    return
                await asyncio.sleep(poll)


async def _flatten(batches: AsyncIterator[list[str]]) -> AsyncIterator[str]:
    try:
        async for batch in batches:
            for line in batch:
                yield line
    finally:
        await batches.aclose()
