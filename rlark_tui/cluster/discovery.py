"""API discovery of the control plane: which groups and versions it serves (`GET /apis`, `GET /api`).
Used by `rlark version`; kept apart from ClusterAccess, which reads objects."""

from __future__ import annotations

from rlark_tui.cluster.errors import Request
from rlark_tui.cluster.http import Http
from rlark_tui.model.objects import dig


def served_versions(http: Http, timeout: float = 5.0) -> dict[str, list[str]]:
    """Group ("" for the core group) -> the versions the server lists for it, preferred version first."""
    served: dict[str, list[str]] = {}
    core = http.json("GET", "/api", Request("get", "api discovery"), timeout=timeout)
    served[""] = [v for v in _list(dig(core, "versions")) if isinstance(v, str)]
    if not served[""]:
        del served[""]
    groups = http.json("GET", "/apis", Request("get", "api discovery"), timeout=timeout)
    for group in _list(dig(groups, "groups")):
        name = dig(group, "name")
        if not isinstance(name, str) or not name:
            continue
        versions = [v for v in (dig(entry, "version") for entry in _list(dig(group, "versions")))
                    if isinstance(v, str)]
        preferred = dig(group, "preferredVersion", "version")
        if preferred in versions:
            versions.remove(preferred)
            versions.insert(0, preferred)
        served[name] = versions
    return served


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []
