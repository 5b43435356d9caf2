"""Services: what screens use instead of the app's internals — the latest SnapshotIndex, the Actions (the one
mutation path), subscriptions to the reconciler's periodic reads (rlark_tui.polls) and the log follower.

Screens subscribe on mount and unsubscribe on unmount; results arrive in the Snapshot (`snapshot.<topic>[key]`).
Subscriptions are counted (two screens on one Job share one read) and survive a restarted reconciler (ctrl+r,
a context switch): `attach` hands them to the new one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rlark_tui.actions import Actions
from rlark_tui.errors import RlarkError

if TYPE_CHECKING:
    from rlark_tui.cluster.logs import LogFollower
    from rlark_tui.model.view_model import SnapshotIndex
    from rlark_tui.reconciler import Reconciler


MAX_FOLDER_OBJECTS = 10_000
"""A folder download stops after this many objects."""


class Services:
    def __init__(self, actions: Actions) -> None:
        self.actions = actions
        self.index: SnapshotIndex | None = None
        """The latest SnapshotIndex the app applied (None before the first Snapshot)."""
        self.wanted_job: str | None = None
        """A Job the job list selects once it is listed (set on JobSubmitted)."""
        self.marked: list[str] = []
        """Jobs marked in the job list (`space`), in marking order: compare (#16) and diff (#20) read them."""
        self._counts: dict[tuple[str, str], int] = {}
        self._detailed: dict[tuple[str, str], int] = {}
        """Of those subscribers, how many asked for detail."""
        self._reconciler: Reconciler | None = None

    @property
    def readonly(self) -> bool:
        return self.actions.readonly

    @property
    def gateway(self) -> str | None:
        """The gateway's base URL, for links shown to the user (L6 TensorBoard); None without one."""
        access = self.actions.access
        return access.gateway if access is not None else None

    def attach(self, reconciler: Reconciler | None) -> None:
        """Serve the subscriptions from `reconciler` from now on (None: no cluster, nothing is read)."""
        self._reconciler = reconciler
        for topic, key in self._counts:
            if reconciler is not None:
                reconciler.subscribe(topic, key, detail=(topic, key) in self._detailed)

    def subscribe(self, topic: str, key: str, *, detail: bool = False) -> None:
        """Read `topic` for `key` periodically (rlark_tui.polls.TOPICS); results in `snapshot.<topic>[key]`.
        `detail`: the topic's detailed read while any subscriber asks for it (polls.HEALTH)."""
        sub = (topic, key)
        self._counts[sub] = self._counts.get(sub, 0) + 1
        if detail:
            self._detailed[sub] = self._detailed.get(sub, 0) + 1
        if (self._counts[sub] == 1 or self._detailed.get(sub) == 1) and self._reconciler is not None:
            self._reconciler.subscribe(topic, key, detail=sub in self._detailed)

    def unsubscribe(self, topic: str, key: str, *, detail: bool = False) -> None:
        """Undo one `subscribe` (with the same `detail`)."""
        sub = (topic, key)
        if detail and sub in self._detailed:
            self._detailed[sub] -= 1
            if not self._detailed[sub]:
                del self._detailed[sub]
        count = self._counts.get(sub, 0) - 1
        if count > 0:
            self._counts[sub] = count
            if detail and sub not in self._detailed and self._reconciler is not None:
                self._reconciler.subscribe(topic, key, detail=False)
            return
        self._counts.pop(sub, None)
        if self._reconciler is not None:
            self._reconciler.unsubscribe(topic, key)

    def poll_now(self, topic: str, key: str) -> None:
        """Read a subscribed topic again now instead of at its next interval."""
        if self._reconciler is not None:
            self._reconciler.poll_now(topic, key)

    def follow_logs(self, on_line: Callable[[str, str, str], None], on_notice: Callable[[str], None], *,
                    tail: int | None = None, previous: bool = False,
                    since_seconds: int | None = None) -> LogFollower | None:
        """The one log follower (cluster.logs.LogFollower, its own threads) for a log view; None when not
        connected to a cluster. The caller adds LogTargets to it and closes it."""
        access = self.actions.access
        if access is None:
            return None
        from rlark_tui.cluster.logs import LogFollower
        return LogFollower(access, on_line, on_notice, tail=tail, previous=previous, since_seconds=since_seconds)

    def download_object(self, storage_class: str, cluster: str, key: str, dest: str,
                        on_progress: Callable[[int, int | None], None] | None = None) -> list[str]:
        """Blocking (the app runs it on a worker thread): download object `key` to `dest` (a file, or a directory
        that gets the key's last part), or, for a folder key ending in `/`, every object below it to directory
        `dest` with the keys' paths below the folder (a key that would land outside `dest` is skipped and named).
        Returns one line per object; raises RlarkError (one line) when nothing could be done."""
        access = self.actions.access
        if access is None:
            raise RlarkError("not connected to a cluster")
        from rlark_tui.cluster import objects
        from rlark_tui.model import storage

        if not key.endswith("/"):
            entry = objects.find_object(access, storage_class, cluster, key)
            if entry is None:
                raise RlarkError(f"no object {storage_class}:{key} on {cluster}")
            if dest.endswith("/"):  # a directory, as typed: made when missing
                Path(dest).mkdir(parents=True, exist_ok=True)
            target = storage.download_target(dest, key)
            if not target.parent.is_dir():
                raise RlarkError(f"{target.parent} is not a directory")
            return [_downloaded_line(objects.download(access, storage_class, cluster, entry, target,
                                                      on_progress=on_progress), entry)]
        root = Path(dest)
        if root.exists() and not root.is_dir():
            raise RlarkError(f"{dest} is not a directory")
        lines, marker = [], ""
        while True:
            page = storage.parse_page(access.storage_list(storage_class, cluster, key, delimiter="", marker=marker,
                                                          max_keys=500), key)
            for entry in page.entries:
                try:
                    target = storage.local_target(root, entry.key, key)
                except RlarkError as exc:
                    lines.append(f"skipped: {exc}")
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    lines.append(_downloaded_line(objects.download(access, storage_class, cluster, entry, target,
                                                                   on_progress=on_progress), entry))
                except RlarkError as exc:
                    lines.append(f"failed: {exc}")
            if len(lines) >= MAX_FOLDER_OBJECTS:
                lines.append(f"stopped after {len(lines)} objects")
                return lines
            if not page.truncated or not page.next_marker or page.next_marker == marker:
                return lines
            marker = page.next_marker

    @property
    def connected(self) -> bool:
        """Whether a cluster is open (False: the app only renders the Snapshots posted to it)."""
        return self.actions.access is not None


def _downloaded_line(done, entry) -> str:
    match = done.matches(entry)
    verdict = "md5 matches the ETag" if match else ("md5 DOES NOT match the ETag" if match is False else
                                                    "ETag is no MD5")
    return f"{done.path}: {done.size} bytes, sha256 {done.sha256[:16]}…, {verdict}"
