"""The sandbox's kubeconfig (mode 0600): control-plane context, one context per data plane, and the
RLark console extension that tells `rlark` where the gateway and the data-plane contexts are.

Contexts and clusters (all with the sandbox CA in `certificate-authority-data` and user `rlark-sandbox`, a
bearer token):
- `rlark-sandbox` (current-context): server `https://127.0.0.1:<port>/clusters/root`, the control plane.
- `rlark-sandbox-<cluster namespace>` (e.g. `rlark-sandbox-rlark-gpu-a`): server
  `https://127.0.0.1:<port>/clusters/<cluster namespace>`, default namespace `rlark-system`, that data plane.

Extension format (on the control-plane context, a standard kubeconfig `NamedExtension` that kubectl keeps
and ignores):

    contexts:
    - name: rlark-sandbox
      context:
        cluster: rlark-sandbox
        user: rlark-sandbox
        extensions:
        - name: rlark.io/console
          extension:
            gateway: https://127.0.0.1:<port>         # gateway base URL; routes start with /api/v1/
            dataPlaneContexts:                        # cluster id (namespace) -> kubeconfig context
              rlark-gpu-a: rlark-sandbox-rlark-gpu-a
              rlark-edge-b: rlark-sandbox-rlark-edge-b
            sandbox: true

Gateway requests authenticate with the control-plane context's credentials (same token and CA).
The same extension may be added by hand to a real installation's kubeconfig.

The control plane's cluster entry also carries where rlark-server is (rlark-platform.md §0b), for zero-config
clients; its CA signs the server's certificate (client certificates come from Secret `rlark-admin-cert`):

    clusters:
    - name: rlark-sandbox
      cluster:
        server: https://127.0.0.1:<port>/clusters/root
        certificate-authority-data: <base64 PEM>
        extensions:
        - name: rlark.io/server
          extension:
            server: https://127.0.0.1:<server port>
            certificate-authority-data: <base64 PEM>
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from rlark_tui.fsutil import write_private

CONTEXT = "rlark-sandbox"
EXTENSION = "rlark.io/console"
SERVER_EXTENSION = "rlark.io/server"


def data_plane_context(cluster_ns: str) -> str:
    return f"{CONTEXT}-{cluster_ns}"


def build(base_url: str, token: str, ca_pem: bytes, clusters: list[str], server_url: str) -> dict:
    ca = base64.b64encode(ca_pem).decode()

    def cluster(name: str, prefix: str) -> dict:
        return {"name": name, "cluster": {"server": f"{base_url}/clusters/{prefix}",
                                          "certificate-authority-data": ca}}

    control_cluster = cluster(CONTEXT, "root")
    control_cluster["cluster"]["extensions"] = [{"name": SERVER_EXTENSION, "extension": {
        "server": server_url, "certificate-authority-data": ca}}]
    control = {"name": CONTEXT, "context": {
        "cluster": CONTEXT, "user": CONTEXT,
        "extensions": [{"name": EXTENSION, "extension": {
            "gateway": base_url,
            "dataPlaneContexts": {ns: data_plane_context(ns) for ns in clusters},
            "sandbox": True,
        }}],
    }}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "current-context": CONTEXT,
        "clusters": [control_cluster] + [cluster(data_plane_context(ns), ns) for ns in clusters],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [control] + [
            {"name": data_plane_context(ns),
             "context": {"cluster": data_plane_context(ns), "user": CONTEXT, "namespace": "rlark-system"}}
            for ns in clusters],
    }


def write(path: Path, config: dict) -> None:
    """Write atomically with mode 0600 (the file holds the bearer token)."""
    write_private(path, yaml.safe_dump(config, sort_keys=False))
