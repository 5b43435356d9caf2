"""The resource types the sandbox serves: rlinf.io kinds on the control plane, core/v1 kinds on data planes.
Names, scopes, short names and printer columns follow ../shared/spec/crds (rlark-platform.md §1).

The control plane also serves the two Kubernetes kinds rlark-server keeps there (rlark-platform.md §0b):
core/v1 Secrets (`default/rlark-admin-cert`, `default/rlark-ui-auth`) and coordination.k8s.io/v1 Leases
(`default/rlark-server-peer-<host>`); they are in CONTROL_KUBE, apart from the rlinf.io kinds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GROUP = "rlinf.io"
VERSION = "v1alpha1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
ROOT = "root"
DATA_NAMESPACE = "rlark-system"

CRUD = ["create", "delete", "get", "list", "patch", "update", "watch"]
READ = ["get", "list", "watch"]


@dataclass(frozen=True)
class ResourceType:
    plural: str
    kind: str
    group: str
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = tuple(CRUD)
    # printer columns after Name: (title, json path below the object, type)
    columns: tuple[tuple[str, str, str], ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()


AGE = ("Age", "metadata.creationTimestamp", "date")
PHASE = ("Phase", "status.phase", "string")

CONTROL_PLANE = {
    r.plural: r for r in (
        ResourceType("jobs", "Job", GROUP, VERSION, False, ("rljob",), columns=(PHASE, AGE)),
        ResourceType("tasks", "Task", GROUP, VERSION, True, ("task",),
                     columns=(("Agent", "spec.agentType", "string"), PHASE, AGE)),
        ResourceType("pods", "Pod", GROUP, VERSION, True, ("rlpod",),
                     columns=(("Domain", "spec.domain", "string"), ("Node", "spec.node", "string"), PHASE, AGE)),
        ResourceType("nodes", "Node", GROUP, VERSION, True, ("rlnode",), columns=(AGE,)),
        ResourceType("domains", "Domain", GROUP, VERSION, False, ("rldomain",), columns=(AGE,)),
        ResourceType("workflows", "Workflow", GROUP, VERSION, False, ("rlwf",), columns=(PHASE, AGE)),
    )
}

COORDINATION = "coordination.k8s.io"
CONTROL_KUBE = {
    r.plural: r for r in (
        ResourceType("secrets", "Secret", "", "v1", True, (), columns=(("Type", "type", "string"), AGE)),
        ResourceType("leases", "Lease", COORDINATION, "v1", True, (),
                     columns=(("Holder", "spec.holderIdentity", "string"), AGE)),
    )
}

DATA_PLANE = {
    r.plural: r for r in (
        ResourceType("pods", "Pod", "", "v1", True, ("po",), tuple(READ)),
        ResourceType("events", "Event", "", "v1", True, ("ev",), tuple(READ)),
        ResourceType("services", "Service", "", "v1", True, ("svc",), tuple(READ)),
        ResourceType("namespaces", "Namespace", "", "v1", False, ("ns",), ("get", "list")),
        ResourceType("secrets", "Secret", "", "v1", True, (), tuple(READ), columns=(("Type", "type", "string"), AGE)),
        ResourceType("storageclasses", "StorageClass", "storage.k8s.io", "v1", False, ("sc",), tuple(READ)),
    )
}


def resource_type(plane: str, resource: str) -> ResourceType | None:
    if plane == ROOT:
        return CONTROL_PLANE.get(resource) or CONTROL_KUBE.get(resource)
    return DATA_PLANE.get(resource)
