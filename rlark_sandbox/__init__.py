"""The embedded RLark sandbox: `Sandbox` (instance.py) owns one state dir, its HTTPS API server, kubeconfig and agent.
Start it in-process on a background thread (`Sandbox(...).start()`, tests) or in the foreground (`serve()`).

    sb = Sandbox(state_dir, port=0, seed="demo").start()
    sb.kubeconfig      # Path of the kubeconfig (mode 0600); one context, "rlark-sandbox" (the control plane)
    sb.gateway         # "https://127.0.0.1:<port>"
    sb.server_url      # "https://127.0.0.1:<server port>": rlark-server, mutual TLS (rlark_server.py)
    sb.ca_path         # Path of the sandbox CA (PEM): signs both ports' certificates and client certificates
    sb.issue_client_cert({"permission:agent-proxy": "gpu-a"}, days=365, not_before=None)  # (cert, key) PEM
    sb.revoke(cert_pem)  # rlark-server answers that certificate 401 from now on
    sb.unknown_routes  # ["METHOD /path", ...]: requests on either port that matched no platform route
    sb.context         # "rlark-sandbox"
    sb.store, sb.logs, sb.faults, sb.proxies   # see store.py, logs.py, faults.py, proxy.py
    sb.network         # the Pods' network (podnet.py): their 127.x Pod IPs, in a namespace of its own when root
    sb.call(fn, *args) # run fn(*args) on the sandbox loop (await it if it returns a coroutine), get the result
    sb.api_client(context=None)  # a kubernetes.client.ApiClient for that context
    sb.stop()

State dir layout: `objects/` (store), `logs/` (container logs), `tls/` (CA + server cert), `token` (0600),
`port` and `server-port` (the last ports, reused on restart when free so kubeconfigs stay valid),
`kubeconfig`, and `pid` while
a sandbox serves it: a second sandbox on the same state dir is refused (`running_pid(state_dir)` tells
whether one is up).
Seeds (`seed.py`) only fill an empty store. Unless `agent=False`, the simulated agent (`sandbox.agent.Agent`,
with the `agent_settings` passed to `Sandbox`, an `AgentSettings`) is created on the sandbox loop, started
after the server listens and stopped on shutdown.

This package face imports nothing heavy: `from rlark_sandbox import seed` (or any light submodule) loads no
server; `Sandbox` and `main_foreground` come from `instance.py` (aiohttp and every route) when first named.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["Sandbox", "default_state_dir", "main_foreground", "running_pid"]
LAZY = ("Sandbox", "main_foreground")


def __getattr__(name: str):
    if name in LAZY:
        from rlark_sandbox import instance
        return getattr(instance, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_state_dir() -> Path:
    """`sandbox/` under rlark's local state dir ($RLARK_STATE_DIR or the platform's user state dir)."""
    from rlark_tui.local.config import state_dir
    return state_dir() / "sandbox"


def running_pid(state_dir: Path | str) -> int | None:
    """The pid of the live process serving `state_dir`, or None (no pid file, or its process is gone; or the file is
    not one this user's sandbox wrote: another user's link, FIFO or file in a shared directory is never read)."""
    from rlark_tui.local.fsutil import read_own
    try:
        pid = int(read_own(Path(state_dir) / "pid", 64).decode(errors="replace").strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid
