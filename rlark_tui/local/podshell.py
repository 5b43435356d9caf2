"""The TUI's hand-over of the terminal to a shell in a Pod (`x`) and its local tunnels to a Job's web ports (`F`).

Owns choosing the Pod for a scope, suspending Textual around the exec (the terminal raw for the shell, then
back exactly as it was) and the tunnels the app keeps open until it exits. Called by the app, never by a screen.
"""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING

from rlark_tui.errors import RlarkError
from rlark_tui.model import keys
from rlark_tui.model.logtarget import Scope
from rlark_tui.model.objects import Pod
from rlark_tui.model.tunnel import OpenTunnel
from rlark_tui.text.sinks import one_line
from rlark_tui.view.index import SnapshotIndex, first_pod

if TYPE_CHECKING:
    from rlark_tui.cluster.tunnel import LoopHandler

TUNNEL_TARGETS = (("Ray dashboard", "ray"), ("TensorBoard", "tensorboard"))


def shell_pod(index: SnapshotIndex, job_name: str, scope: Scope) -> Pod | None:
    """The Pod a shell opens in: the scope's Pod, else the first Pod of the scope's role (for the Header role
    or all Pods: of the Header role, else of the first role that has one)."""
    if scope.kind == "pod":
        raw = index.snapshot.pods.get(scope.name)
        return Pod(raw) if raw is not None else None
    job = index.job(job_name)
    if job is None:
        return None
    if scope.kind == "role":
        names = [scope.name]
    else:
        names = [job.head_task_name] + [job.task_name(spec) for spec in job.tasks]
    return next((pod for pod in map(partial(first_pod, index), names) if pod is not None), None)


def run_shell(app, pod: Pod) -> str:
    """Suspend the app, run an interactive shell in the Pod's `main` on this terminal, resume; what happened."""
    from rlark_tui.cluster.podexec import SHELL, ExecSession, data_plane_client, relay

    name = pod.pod_name or pod.name
    session = ExecSession.open(data_plane_client(app.access, pod.namespace), name, list(SHELL),
                               namespace=pod.pod_namespace or keys.WORKLOAD_NAMESPACE, stdin=True, tty=True,
                               source=f"data plane {pod.namespace}")
    try:
        with app.suspend():
            # straight to the terminal the app let go of (the app holds sys.stdout): one line, no escape
            os.write(1, f"Shell in {one_line(name)} ({one_line(pod.namespace)}); exit it to return to rlark.\r\n"
                     .encode())
            code = relay(session, stdin_fd=0, stdout_fd=1, stderr_fd=2, tty=True)
    finally:
        session.close()
    return f"shell in {name} exited with code {code}"


def open_tunnels(access, actions, job_name: str, tunnels: dict,
                 loop_handler: LoopHandler | None = None) -> list[OpenTunnel | str]:
    """Tunnels to the Job's Ray dashboard and TensorBoard (kept in `tunnels`, one per target, reused), each loop's
    exceptions told by `loop_handler` (the app's crash.Teller); for each target its URL, or why there is none.
    Blocking (run in a worker thread)."""
    from rlark_tui.cluster.kinds import JOBS
    from rlark_tui.cluster.tunnel import job_tunnel
    from rlark_tui.model.objects import Job

    job = Job(access.get(JOBS, job_name))
    shown: list[OpenTunnel | str] = []
    for label, target in TUNNEL_TARGETS:
        key = (job_name, target)
        try:
            if key not in tunnels:
                tunnels[key] = job_tunnel(access, job, target, methods=actions.tunnel_methods(),
                                          name=f"{job_name} {target}").start(loop_handler)
            shown.append(OpenTunnel(label, tunnels[key].url))
        except (RlarkError, OSError) as exc:
            shown.append(f"{label}: {exc}")
    return shown
