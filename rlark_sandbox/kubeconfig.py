"""The sandbox's kubeconfig (mode 0600): one context, the control plane, like a real admin kubeconfig, with the
RLark console extension that tells `rlark` where the gateway is and, on its cluster entry, where rlark-server is.

Context `rlark-sandbox` (current-context), user `rlark-sandbox` (a bearer token), cluster `rlark-sandbox`: server
`https://127.0.0.1:<port>/clusters/root` with the sandbox CA in `certificate-authority-data`. There are no
member-cluster contexts: data planes are reached through rlark-server (platform §0b).

    contexts:
    - name: rlark-sandbox
      context:
        cluster: rlark-sandbox
        user: rlark-sandbox
        extensions:
        - name: rlark.io/console
          extension:
            gateway: https://127.0.0.1:<port>         # gateway base URL; routes start with /api/v1/
            sandbox: true
    clusters:
    - name: rlark-sandbox
      cluster:
        server: https://127.0.0.1:<port>/clusters/root
        certificate-authority-data: <base64 PEM>
        extensions:
        - name: rlark.io/server                       # rlark-server, for zero-config clients; its CA signs the
          extension:                                  # server's certificate (client certificates come from
            server: https://127.0.0.1:<server port>   # Secret rlark-admin-cert)
            certificate-authority-data: <base64 PEM>

Gateway requests authenticate with the context's credentials (same token and CA).
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from rlark_tui.local.fsutil import write_private

CONTEXT = "rlark-sandbox"
EXTENSION = "rlark.io/console"
SERVER_EXTENSION = "rlark.io/server"


def build(base_url: str, token: str, ca_pem: bytes, server_url: str) -> dict:
    ca = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "current-context": CONTEXT,
        "clusters": [{"name": CONTEXT, "cluster": {
            "server": f"{base_url}/clusters/root", "certificate-authority-data": ca,
            "extensions": [{"name": SERVER_EXTENSION, "extension": {"server": server_url,
                                                                      "certificate-authority-data": ca}}]}}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {
            "cluster": CONTEXT, "user": CONTEXT,
            "extensions": [{"name": EXTENSION, "extension": {"gateway": base_url, "sandbox": True}}]}}],
    }


def write(path: Path, config: dict) -> None:
    """Write atomically with mode 0600 (the file holds the bearer token)."""
    write_private(path, yaml.safe_dump(config, sort_keys=False))
