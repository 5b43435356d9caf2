"""LogTarget: one Pod whose `main` container a log reader reads (its role and where it runs), and the
`role/pod` prefix its lines carry. Pure: chosen from the Snapshot by screens, read by cluster.logs.
"""

from __future__ import annotations

from dataclasses import dataclass


def source_name(role: str, pod: str) -> str:
    """The prefix shown before each line: `role/pod`."""
    return f"{role}/{pod}" if role else pod


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
