"""I/O with an RLark installation: kubeconfig contexts, the control plane, data planes, gateway, logs.

Import `ClusterAccess` from here; errors are in `rlark_tui.cluster.errors`, kinds in `rlark_tui.cluster.kinds`.
Its names load on first use: a submodule (the lean path of `rlark get`, cluster/lean.py) imports without them.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess, WatchEvent
    from rlark_tui.cluster.kinds import ListResult

__all__ = ["ClusterAccess", "ListResult", "WatchEvent"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from rlark_tui.cluster import access
        return getattr(access, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
