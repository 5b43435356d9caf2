"""The `kubernetes` package entered without running its `__init__`, which imports every submodule at once.
rlark imports `kubernetes.client` at start-up and the loader, watch, stream, ... only where it uses them."""

from __future__ import annotations

import importlib.util
import sys


def enter_lazily() -> None:
    """Register the `kubernetes` package (its path, not its `__init__`) unless it is imported already.

    Its `__init__` imports `kubernetes.config`, whose kubeconfig loader pulls in google-auth, requests-oauthlib
    and pydantic (0.4–0.5 s here) even when a context is a plain token or client certificate. Submodules import
    as usual afterwards (`from kubernetes import config` still works); only attributes the `__init__` would have
    set without an import (`kubernetes.config` after a bare `import kubernetes`) are missing until imported.
    """
    if "kubernetes" in sys.modules:
        return
    spec = importlib.util.find_spec("kubernetes")
    if spec is None or spec.submodule_search_locations is None:
        return
    sys.modules["kubernetes"] = importlib.util.module_from_spec(spec)
