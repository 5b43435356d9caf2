"""What the app hands its screens, in two objects: `AppState`, what screens read (the latest SnapshotIndex, the
session's facts, the UI state screens share), and `Intents`, what screens do besides posting messages (subscribe to
the reconciler's periodic reads, ask for one now, follow logs). Mutations are not here: a screen posts a message and
the app runs it through rlark_tui.flow.actions. Work that ends in a file or a request (a storage download) runs on the
app's workers, in cluster/ (objects.download_to).

Screens subscribe on mount and unsubscribe on unmount; results arrive in the Snapshot (`snapshot.<topic>[key]`).
Subscriptions are counted (two screens on one Job share one read) and survive a restarted reconciler (ctrl+r,
a context switch): `attach` hands them to the new one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.logs import LogFollower
    from rlark_tui.flow.reconciler import Reconciler
    from rlark_tui.model.views import ViewSettings
    from rlark_tui.view.contexts import ContextState
    from rlark_tui.view.index import SnapshotIndex


class AppState:
    """What screens read: the app writes the index, the cluster and the namespace; screens write only their shared
    UI state (`wanted_job`, `marked`)."""

    def __init__(self, readonly: bool, access: ClusterAccess | None = None) -> None:
        self.readonly = readonly
        """`--readonly`, or a focused context its kubeconfig makes read-only: screens hide their mutation keys
        (rlark_tui.flow.actions refuses them anyway)."""
        self.readonly_everywhere = readonly
        """`--readonly`: every context is read-only (the app sets it; `readonly` follows the focused context)."""
        self.index: SnapshotIndex | None = None
        """The latest SnapshotIndex the app applied (None before the first Snapshot)."""
        self.namespace = ""
        """The namespace chosen with `:ns` ("": all)."""
        self.wanted_job: str | None = None
        """A Job the job list selects once it is listed (set on JobSubmitted)."""
        self.marked: list[str] = []
        """Jobs marked in the job list (`space`), in marking order: compare (#16) and diff (#20) read them."""
        self._access = access
        self.contexts: dict[str, SnapshotIndex | None] = {}
        """With several contexts (`--context A --context B`, `--all-contexts`): each one's latest index, in order
        (empty with one context). The focused one's is also `index`."""
        self.context_errors: dict[str, str] = {}
        """The contexts that could not be opened at all, and why."""
        self.views: ViewSettings | None = None
        """The view settings of the context(s) shown (model/views.py), once read; the app keeps them saved."""
        from rlark_tui.view.contexts import MergedRows
        self.merged = MergedRows()
        """The job list's rows over every context (`merged.rows`, by `JobRow.key`)."""

    @property
    def several(self) -> bool:
        """Whether the app shows several contexts at once."""
        return bool(self.contexts or self.context_errors)

    def context_index(self, context: str, index: SnapshotIndex) -> None:
        """The app applied a new index of `context`: the merged rows follow."""
        self.contexts[context] = index
        self.merged.update(self.contexts)

    def context_states(self) -> list[ContextState]:
        """Each context's connection state, for the header (none with one context)."""
        from rlark_tui.view.contexts import context_state
        names = list(dict.fromkeys([*self.contexts, *self.context_errors]))
        return [context_state(name, self.contexts.get(name), self.context_errors.get(name, "")) for name in names]

    def focus(self, access: ClusterAccess) -> None:
        """Several contexts: the Job screens, actions and reads now go to `access`'s context (its index kept)."""
        self._access = access
        self.index = self.contexts.get(access.context)

    def connect(self, access: ClusterAccess) -> None:
        """The app switched to `access` (a new context): no index until its first Snapshot."""
        self._access = access
        self.index = None

    @property
    def context(self) -> str:
        """The kubeconfig context of the cluster shown ("" without one)."""
        return getattr(self._access, "context", "") or ""

    @property
    def connected(self) -> bool:
        """Whether a cluster is open (False: the app only renders the Snapshots posted to it)."""
        return self._access is not None

    @property
    def gateway(self) -> str | None:
        """The gateway's base URL, for links shown to the user (L6 TensorBoard); None without one."""
        return self._access.gateway if self._access is not None else None


class Intents:
    """What screens do that is not a message: the subscriptions to the reconciler's periodic reads
    (rlark_tui.flow.polls.TOPICS), a read now, and the log follower. None of it mutates the cluster."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}
        self._detailed: dict[tuple[str, str], int] = {}
        """Of those subscribers, how many asked for detail."""
        self._reconciler: Reconciler | None = None

    def attach(self, reconciler: Reconciler | None) -> None:
        """Serve the subscriptions from `reconciler` from now on, and follow logs on its cluster (None: no cluster,
        nothing is read); the previous reconciler, when it goes on (another context's), reads them no more."""
        previous, self._reconciler = self._reconciler, reconciler
        for topic, key in self._counts:
            if previous is not None and previous is not reconciler:
                previous.unsubscribe(topic, key)
            if reconciler is not None:
                reconciler.subscribe(topic, key, detail=(topic, key) in self._detailed)

    def subscribe(self, topic: str, key: str, *, detail: bool = False) -> None:
        """Read `topic` for `key` periodically (rlark_tui.flow.polls.TOPICS); results in `snapshot.<topic>[key]`.
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

    def follow_logs(self, on_lines: Callable[[str, list[str], list[str]], None], on_notice: Callable[[str], None], *,
                    tail: int | None = None, previous: bool = False, since_seconds: int | None = None,
                    masking: tuple[dict | None, Callable] | None = None) -> LogFollower | None:
        """The one log follower (cluster.logs.LogFollower, its own threads) for a log view, on the reconciler's
        cluster; None when not connected to a cluster. The caller adds LogTargets to it and closes it. With
        `masking` (the raw Job and a LineRedactor's add_known), each Pod's first read waits for the values of the
        Secrets it references (cluster/secrets.py); one that cannot be read is told as a notice."""
        if self._reconciler is None:
            return None
        from rlark_tui.cluster.logs import LogFollower
        access = self._reconciler.access
        before_read = None
        if masking is not None and masking[0] is not None:
            from rlark_tui.cluster.secrets import LogSecrets
            before_read = LogSecrets(access, masking[0], masking[1], on_notice).before_read
        return LogFollower(access, on_lines, on_notice, tail=tail, previous=previous, since_seconds=since_seconds,
                           before_read=before_read)
