"""API discovery of the control plane: which groups and versions it serves (`GET /apis`, `GET /api`).
Used by `rlark version`; kept apart from ClusterAccess, which reads objects."""

from __future__ import annotations

from rlark_tui.cluster.errors import Request
from rlark_tui.cluster.http import Http


def served_versions(http: Http, timeout: float = 5.0) -> dict[str, list[str]]:
    """Group ("" for the core group) -> the versions the server lists for it, preferred version first."""
    served: dict[str, list[str]] = {}
    core = http.json("GET", "/api", Request("get", "api discovery"), timeout=timeout)
    if isinstance(core, dict) and isinstance(core.get("versions"), list):
        served[""] = [str(v) for v in core["versions"]]
    groups = http.json("GET", "/apis", Request("get", "api discovery"), timeout=timeout)
    for group in (groups.get("groups") or []) if isinstance(groups, dict) else []:
        if not isinstance(group, dict) or not group.get("name"):
            continue
        versions = [str(v.get("version")) for v in group.get("versions") or [] if isinstance(v, dict)]
        preferred = (group.get("preferredVersion") or {}).get("version")
        if preferred in versions:
            versions.remove(preferred)
            versions.insert(0, preferred)
        served[str(group["name"])] = versions
    return served
