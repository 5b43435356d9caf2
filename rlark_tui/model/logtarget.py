"""LogTarget: one Pod whose `main` container a log reader reads (its role and where it runs), and the
`role/pod` prefix its lines carry. Pure: chosen from the Snapshot by screens, read by cluster.logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, NamedTuple

from rlark_tui.text.sinks import one_line


class _ScopeFields(NamedTuple):
    kind: Literal["header", "all", "role", "pod"]
    name: str = ""


class Scope(_ScopeFields):
    """Which Pods of a Job a log view or a shell means, one member per meaning: `Scope.HEADER` (the Header role's
    Pods: what `l` opens), `Scope.ALL` (every Pod, merged), `Scope.role(task name)`, `Scope.pod(Pod CR key)`.
    A tuple `(kind, name)`; the fields live in a NamedTuple base because a NamedTuple's body takes no ClassVar."""

    __slots__ = ()

    HEADER: ClassVar[Scope]
    ALL: ClassVar[Scope]

    @classmethod
    def role(cls, task_name: str) -> Scope:
        return cls("role", task_name)

    @classmethod
    def pod(cls, key: str) -> Scope:
        return cls("pod", key)


Scope.HEADER = Scope("header")
Scope.ALL = Scope("all")


def source_name(role: str, pod: str) -> str:
    """The prefix shown before each line: `role/pod`, on one line (sinks.one_line): a Pod CR's podName is the
    data plane's free text, and a line break in it forged a log line under the Pod's own."""
    return one_line(f"{role}/{pod}" if role else pod)


@dataclass(frozen=True)
class LogTarget:
    """One Pod whose `main` container is read: its role (task name inside the Job) and where it runs."""

    role: str
    pod: str
    cluster: str
    namespace: str
    phase: str = ""

    @property
    def source(self) -> str:
        return source_name(self.role, self.pod)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.cluster, self.namespace, self.pod
