"""I/O with an RLark installation: kubeconfig contexts, the control plane, data planes, gateway, logs.

Import `ClusterAccess` from here; errors are in `rlark_tui.cluster.errors`, kinds in `rlark_tui.cluster.kinds`.
"""

from rlark_tui.cluster.k8s_package import enter_lazily

enter_lazily()  # before any `from kubernetes import ...` below (start-up time)

from rlark_tui.cluster.access import ClusterAccess, ListResult, WatchEvent

__all__ = ["ClusterAccess", "ListResult", "WatchEvent"]
