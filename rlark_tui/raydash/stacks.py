"""Take the stacks of a Job's live Ray workers: the State API's actors, their node IPs and Pods, then Ray's
`/worker/traceback` where the head has profiling on, else the fixed read-only `py-spy-dump` in each worker's Pod;
dumps run in parallel, at most PARALLEL at once, each under its own time bound (ray-debug.md)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from rlark_tui.cluster.errors import ApiError, Unreachable
from rlark_tui.errors import RlarkError
from rlark_tui.model import fixed_commands, keys
from rlark_tui.model.objects import Job, Pod
from rlark_tui.model.quantity import size_text
from rlark_tui.telemetry import stacks as pure
from rlark_tui.text.sinks import shell_line

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.raydash.client import RayDashboard

PARALLEL = 8
TRACEBACK_TIMEOUT = 15.0
TAKE_SECONDS = 60.0
"""All dumps of one take: a rank whose dump has not come by then is said to have none (the dumps still under way
end at their own bound on their threads). Each dump's bound alone allowed ranks / PARALLEL x 15 s: 32 minutes of
`rlark stacks` or the Stacks screen for 1,024 ranks whose py-spy never exits or whose head holds every dump."""
MAX_RANKS = 1024
"""The most ranks dumped at once (the Job's ALIVE actors as its head lists them): each dump is a request and up
to telemetry.stacks.MAX_DUMP_LINES frames kept until all are grouped."""
EXEC_REFUSED = ("Ray's dashboard has profiling off and rlark cannot exec in the Pod ({why}): set "
                "RAY_DASHBOARD_ENABLE_PROFILING=1 on the Header role, or give rlark a route to the Pods "
                "(`rlark config`)")


class StacksUnavailable(RlarkError):
    """No stacks at all: no Ray dashboard, or its actor list cannot be read."""


def role_of(pod: Pod, job: Job) -> str:
    task = pod.task_name
    return task[len(job.name) + 1:] if task.startswith(job.name + "-") else task


def take(access: ClusterAccess, job: Job, role: str | None = None, all_threads: bool = False,
         max_ranks: int | None = None) -> pure.Stacks:
    """The grouped stacks of the Job's ALIVE actors (those of role `role`'s Pods only, when given), cleaned and
    with the Job's secret values masked (telemetry.stacks.masked; cluster/secrets.pods_secrets: the Secrets its Pods
    reference and the Ray token too): what the CLI prints and the TUI shows. With
    `max_ranks`, a Job of more ranks is not dumped (StacksUnavailable)."""
    dashboard = access.ray_dashboard(job)
    if dashboard is None:
        raise StacksUnavailable(f"stacks: no way to the Ray dashboard of {job.name} (no Header role, or "
                                f"{access.server_problem or 'no rlark-server'})")
    try:
        actors = dashboard.state_list("actors", "Ray actors", [("detail", "true"), ("limit", "10000")])
        ips = dashboard.node_ips()
        profiling = dashboard.profiling_enabled()
    except (ApiError, Unreachable) as exc:
        raise StacksUnavailable(f"stacks: the Ray dashboard of {job.name}: {exc}") from None
    tasks: list[dict[str, Any]] = []
    try:
        tasks = access.job_tasks(job.name)
        pods = [Pod(raw) for raw in access.job_pods(job.name, tasks)]
    except (ApiError, Unreachable):
        pods = []
    by_ip = {pod.ip: pod for pod in pods if pod.ip and pod.phase == "Running"}
    workers: list[tuple[pure.Worker, str]] = []
    for actor in actors:
        name, pid = actor.get("name"), actor.get("pid")
        if actor.get("state") != "ALIVE" or not isinstance(pid, int) or not pid \
                or str(actor.get("class_name") or "").startswith("JobSupervisor"):
            continue
        ip = ips.get(str(actor.get("node_id") or ""), "")
        pod = by_ip.get(ip)
        if role and (pod is None or role_of(pod, job) != role):
            continue
        workers.append((pure.Worker(str(name or actor.get("actor_id") or pid), str(actor.get("class_name") or ""),
                                    pid, pod.pod_name if pod else "", (pod.node if pod else "") or ip), ip))
    if len(workers) > MAX_RANKS and (max_ranks is None or max_ranks > MAX_RANKS):
        raise StacksUnavailable(f"stacks: {len(workers):,} ranks, more than {MAX_RANKS:,}: not taken (--role takes "
                                "one role's)")
    if max_ranks is not None and len(workers) > max_ranks:
        raise StacksUnavailable(f"stacks: {len(workers)} ranks, more than {max_ranks}; `{shell_line(['rlark', 'stacks'], [job.name])}` "
                                "takes them")
    errors: list[pure.PodError] = []
    if profiling:
        dumped = _ray_traceback(dashboard, workers, errors)
    else:
        dumped = _py_spy(access, job, workers, by_ip, errors)
    found = pure.group(job.name, "ray-dashboard" if profiling else "py-spy", dumped, errors, all_threads)
    from rlark_tui.cluster.secrets import pods_secrets
    return pure.masked(found, pods_secrets(access, job.raw, pods, tasks).values)


def _parallel(fn: Callable[[tuple[pure.Worker, str]], pure.Worker], items: list[tuple[pure.Worker, str]],
              reasons: dict[str, str]) -> tuple[list[pure.Worker], dict[str, str]]:
    """`fn` of each (worker, IP), PARALLEL at once, within TAKE_SECONDS in all: a worker whose dump has not come by
    then is kept without one, its Pod's reason said. The reasons `fn` gave, as they stood at the end."""
    if not items:
        return [], dict(reasons)
    pool = ThreadPoolExecutor(max_workers=min(PARALLEL, len(items)), thread_name_prefix="stacks")
    futures = [pool.submit(fn, item) for item in items]
    done, _ = wait(futures, timeout=TAKE_SECONDS)
    pool.shutdown(wait=False, cancel_futures=True)
    said = dict(reasons)  # a copy: a dump under way still adds to `reasons` on its thread
    found = []
    for (worker, ip), future in zip(items, futures, strict=True):
        if future in done:
            found.append(future.result())
        else:
            found.append(worker)
            said.setdefault(worker.pod or ip or worker.name, f"no stack within {TAKE_SECONDS:g} s (all the dumps of a "
                                                             "take; the rest not waited for)")
    return found, said


def _ray_traceback(dashboard: RayDashboard, workers: list[tuple[pure.Worker, str]],
                   errors: list[pure.PodError]) -> list[pure.Worker]:
    """Ray's `/worker/traceback` of each worker; one reason per Pod where no dump came."""
    reasons: dict[str, str] = {}

    def dump(item: tuple[pure.Worker, str]) -> pure.Worker:
        worker, ip = item
        try:
            text = dashboard.text("/worker/traceback", "a worker's stack",
                                  [("pid", str(worker.pid)), ("ip", ip), ("native", "0")], timeout=TRACEBACK_TIMEOUT)
        except (ApiError, Unreachable) as exc:
            text = str(exc)
        parsed = pure.parse_dump(text)
        if parsed is None:
            reasons.setdefault(worker.pod or ip or worker.name, pure.traceback_failure(text))
            return worker
        return pure.Worker(worker.name, worker.cls, worker.pid, worker.pod, worker.node, parsed)

    done, said = _parallel(dump, workers, reasons)
    errors.extend(pure.PodError(pod, reason) for pod, reason in said.items())
    return done


def _py_spy(access: ClusterAccess, job: Job, workers: list[tuple[pure.Worker, str]], by_ip: dict[str, Pod],
            errors: list[pure.PodError]) -> list[pure.Worker]:
    """py-spy in each worker's Pod; one reason per Pod where no dump could be taken."""
    from rlark_tui.cluster.podexec import run_fixed

    reasons: dict[str, str] = {}

    def dump(item: tuple[pure.Worker, str]) -> pure.Worker:
        worker, ip = item
        pod = by_ip.get(ip)
        if pod is None:
            reasons.setdefault(ip or worker.name, f"no Running Pod of {job.name} has node IP {ip or '?'}")
            return worker
        try:
            result = run_fixed(access, pod.namespace, pod.pod_name, "py-spy-dump", str(worker.pid),
                               namespace=pod.pod_namespace or keys.WORKLOAD_NAMESPACE)
        except RlarkError as exc:
            reasons.setdefault(pod.pod_name, EXEC_REFUSED.format(why=str(exc)))
            return worker
        if result.truncated:
            bound = size_text(fixed_commands.command("py-spy-dump").max_output)
            reasons.setdefault(pod.pod_name, f"py-spy's dump passed {bound}: not read past it")
            return worker
        stdout = result.stdout.decode("utf-8", "replace")
        parsed = pure.parse_dump(stdout) if result.exit_code == 0 else None
        if parsed is None:
            reasons.setdefault(pod.pod_name, pure.dump_failure(result.exit_code, stdout,
                                                               result.stderr.decode("utf-8", "replace")))
            return worker
        return pure.Worker(worker.name, worker.cls, worker.pid, worker.pod, worker.node, parsed)

    done, said = _parallel(dump, workers, reasons)
    errors.extend(pure.PodError(pod, reason) for pod, reason in said.items())
    return done
