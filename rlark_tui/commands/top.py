"""`rlark top pods|jobs|nodes [-A] [-n NS]`: resource use shaped like `kubectl top`, with GPU columns.

CPU and memory from the member clusters' metrics.k8s.io PodMetrics (else each Pod's cgroup, memory only in one
read), GPUs from `nvidia-smi` through the fixed read-only exec in the Running Pods that request GPUs
(cluster/usage_reads.py): allowed under `--readonly`. `-` where a number is not known (no GPUs, no nvidia-smi).
"""

from __future__ import annotations

import argparse
import sys

from rlark_tui.cluster.kinds import JOBS, NODES, PODS, TASKS
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.telemetry.sample import CPU_MILLICORES, MEMORY_BYTES, PodUsage, gpu_mem_total_mib, gpu_mem_used_mib
from rlark_tui.telemetry.usage import NONE, cpu_cell, gpu_cell, gpu_mem_cell, mean_gpu_percent, mem_cell, percent_cell
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import shell_line

WHAT = ("pods", "pod", "po", "jobs", "job", "nodes", "node", "no")


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "top", parents=parents, help="CPU, memory and GPU use of Running Pods, Jobs or Nodes (like kubectl top)",
        description="Resource use like `kubectl top`, with GPU columns: CPU and memory from metrics.k8s.io "
                    "PodMetrics (else the Pod's cgroup), GPU% and GPU-MEM from nvidia-smi in Running Pods that "
                    "request GPUs. `-` where a number is not known.")
    parser.add_argument("what", metavar="pods|jobs|nodes", choices=WHAT)
    parser.add_argument("name", nargs="?", metavar="JOB",
                        help="with `job`: that Job's GPU use by role (min/mean/max over each role's GPUs) and a note "
                             "when one role's mean is 70 points or more above another's")
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="all cluster namespaces")
    parser.add_argument("-n", "--namespace", metavar="NS", help="cluster namespace of the Pods or Nodes")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.contexts import chosen

    contexts = chosen(args)
    if contexts is not None:
        return run_contexts(args, contexts)
    access = ClusterAccess.from_args(args)
    try:
        if args.name:
            if args.what not in ("jobs", "job"):
                raise UsageError(f"{shell_line(['rlark', 'top'], [args.what])} takes no name; `rlark top job JOB` shows one Job by role")
            text, unread = job_roles_text(access, args.name)
            print(text)
            if unread:
                from rlark_tui.text.sinks import one_line
                print(one_line(unread), file=sys.stderr)
        else:
            print(top_text(access, args.what, None if args.all_namespaces else (
                args.namespace or access.namespace or "default"), args.all_namespaces))
    finally:
        access.close()
    return 0


def run_contexts(args: argparse.Namespace, contexts: list[str]) -> int:
    """`rlark top pods|jobs|nodes` of several contexts: read in parallel (cluster/contexts.py), one table with a
    CONTEXT column; a context that fails or does not answer in time is one `context B: <why>` line on stderr."""
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.contexts import deadline, fan_out, narrowed
    from rlark_tui.cluster.output import merged_table

    if args.name:
        raise UsageError("rlark top job JOB reads one context: give --context once")

    def one(context: str) -> tuple[list[str], list[list[str]]]:
        access = ClusterAccess.from_args(narrowed(args, context))
        try:
            return top_cells(access, args.what, None if args.all_namespaces else (
                args.namespace or access.namespace or "default"), args.all_namespaces)
        finally:
            access.close()

    outcomes = fan_out(contexts, one, deadline(args))
    for outcome in outcomes:
        if outcome.error:
            print(f"context {outcome.context}: {outcome.error}", file=sys.stderr)
    parts = [(o.context, *o.value) for o in outcomes if o.value is not None]
    if parts:
        print(merged_table(parts))
    return 1 if any(o.error for o in outcomes) else 0


def top_text(access, what: str, namespace: str | None, all_namespaces: bool) -> str:
    """The table `rlark top <what>` prints."""
    from rlark_tui.cluster.output import table

    return table(*top_cells(access, what, namespace, all_namespaces))


def top_cells(access, what: str, namespace: str | None, all_namespaces: bool) -> tuple[list[str], list[list[str]]]:
    """The headers and rows of `rlark top <what>`."""
    from rlark_tui.cluster import usage_reads as usage
    from rlark_tui.flow.snapshot import Snapshot, source_key
    from rlark_tui.model.objects import Node
    from rlark_tui.view.index import SnapshotIndex

    def keyed(items):
        return {source_key(obj): obj for obj in items}

    jobs = access.list(JOBS).items
    index = SnapshotIndex(Snapshot(jobs=keyed(jobs), tasks=keyed(access.list(TASKS, None).items),
                                   pods=keyed(access.list(PODS, None).items)))
    targets = [t for t in usage.targets_of(index, index.jobs) if namespace is None or t[usage.CLUSTER] == namespace]
    samples = usage.sample(access, targets, exec_seconds=0.0, execs_per_round=None).samples
    pods = {f"{pod.namespace}/{pod.name}": pod for job in index.jobs.values() for pod in index.job_pods(job)}
    gpus = {key: count for key, _, _, count in targets}
    kind = what.rstrip("s") if what not in ("po", "no") else {"po": "pod", "no": "node"}[what]
    if kind == "pod":
        if not targets:
            raise RlarkError(f"no Running Pods found{f' in {namespace}' if namespace else ''}")
        headers = ["NAME", "CPU(cores)", "MEMORY(bytes)", "GPUS", "GPU%", "GPU-MEM"]
        rows = sorted(([pods[key].namespace] if all_namespaces else []) + [
            clean(pod), cpu_cell(samples.get(key)), mem_cell(samples.get(key)), _count(count),
            gpu_cell(samples.get(key)), gpu_mem_cell(samples.get(key))] for key, _, pod, count in targets)
        return (["NAMESPACE"] if all_namespaces else []) + headers, rows
    if kind == "job":
        rows = []
        for name, job in sorted(index.jobs.items()):
            keys_ = [f"{p.namespace}/{p.name}" for p in index.job_pods(job)
                     if f"{p.namespace}/{p.name}" in samples]
            if not keys_:
                continue
            found = [samples[k] for k in keys_]
            rows.append([clean(name), _sum_cpu(found), _sum_mem(found), _count(sum(gpus[k] for k in keys_)),
                         percent_cell(mean_gpu_percent(found)), _gpu_mem(found)])
        if not rows:
            raise RlarkError("no Jobs with Running Pods found")
        return ["NAME", "CPU(cores)", "MEMORY(bytes)", "GPUS", "GPU%", "GPU-MEM"], rows
    nodes = [Node(raw) for raw in access.list(NODES, namespace).items]
    rows = []
    for node in sorted(nodes, key=lambda n: (n.namespace, n.name)):
        keys_ = [k for k in samples if pods[k].node == node.name and pods[k].namespace == node.namespace]
        found = [samples[k] for k in keys_]
        cores, memory = node.capacity("cpu"), node.capacity("memory")
        cpu = sum(s[CPU_MILLICORES] or 0 for s in found)
        mem = sum(s[MEMORY_BYTES] or 0 for s in found)
        rows.append(([clean(node.namespace)] if all_namespaces else []) + [
            clean(node.name), f"{cpu:.0f}m", percent_cell(cpu / 10 / cores if cores else None),
            f"{mem / (1 << 20):.0f}Mi", percent_cell(100 * mem / memory if memory else None),
            f"{_count(sum(gpus[k] for k in keys_))}/{_count(node.capacity('nvidia.com/gpu') or 0)}",
            percent_cell(mean_gpu_percent(found))])
    if not rows:
        raise RlarkError(f"no Nodes found{f' in {namespace}' if namespace else ''}")
    return (["NAMESPACE"] if all_namespaces else []) + [
        "NAME", "CPU(cores)", "CPU%", "MEMORY(bytes)", "MEMORY%", "GPUS", "GPU%"], rows


def _index(access):
    from rlark_tui.flow.snapshot import Snapshot, source_key
    from rlark_tui.view.index import SnapshotIndex

    def keyed(items):
        return {source_key(obj): obj for obj in items}

    return SnapshotIndex(Snapshot(jobs=keyed(access.list(JOBS).items), tasks=keyed(access.list(TASKS, None).items),
                                  pods=keyed(access.list(PODS, None).items)))


def job_roles_text(access, name: str) -> tuple[str, str]:
    """`rlark top job JOB`: per role, its Running Pods' GPU utilisation and memory, and the imbalance note; and why
    RLinf's placement, which the note names, could not be read, in one line ('' when it was)."""
    from rlark_tui.cluster import usage_reads as usage
    from rlark_tui.cluster.checkpoints import placement as config_placement
    from rlark_tui.cluster.checkpoints import resolved_config
    from rlark_tui.cluster.metrics import MetricsUnavailable, find_header
    from rlark_tui.cluster.output import table
    from rlark_tui.telemetry.balance import by_role, imbalance, memory_cell, util_cell

    index = _index(access)
    job = index.job(name)
    if job is None:
        raise RlarkError(f"no Job {name}")
    targets = usage.targets_of(index, {name: job})
    samples = usage.sample(access, targets, exec_seconds=0.0, execs_per_round=None).samples
    running = {key for key, *_ in targets}
    pods = {}
    for spec in job.tasks:
        keys_ = [f"{p.namespace}/{p.name}" for p in index.pods_by_task.get(job.task_name(spec), [])]
        pods[spec.role_display_name or spec.name] = [samples.get(k) for k in keys_ if k in running]
    rows = by_role(pods)
    if not any(row.pods for row in rows):
        raise RlarkError(f"Job {name} has no Running Pods")
    lacking = "no placement in the imbalance note"
    placement, unread = None, ""
    try:
        placement = config_placement(resolved_config(access, find_header(access, name), "top job", lacking))
    except MetricsUnavailable as exc:
        unread = f"top job: {str(exc).removeprefix('metrics: ')}, so {lacking}"
    except RlarkError as exc:
        unread = str(exc)

    text = table(["ROLE", "PODS", "GPUS", "GPU% MIN/MEAN/MAX", "GPU-MEM MIN/MEAN/MAX"],
                 [[clean(r.role), str(r.pods), str(r.gpus), util_cell(r), memory_cell(r)]
                  for r in rows])
    note = imbalance(rows, placement)
    return text + (f"\nimbalance: {clean(note)}" if note else ""), unread


def _count(value: float) -> str:
    return f"{value:g}" if value else "0"


def _sum_cpu(samples: list[PodUsage]) -> str:
    known = [cpu for s in samples if (cpu := s[CPU_MILLICORES]) is not None]
    return f"{sum(known):.0f}m" if known else NONE


def _sum_mem(samples: list[PodUsage]) -> str:
    known = [memory for s in samples if (memory := s[MEMORY_BYTES]) is not None]
    return f"{sum(known) / (1 << 20):.0f}Mi" if known else NONE


def _gpu_mem(samples: list[PodUsage]) -> str:
    used = [mib for s in samples if (mib := gpu_mem_used_mib(s)) is not None]
    total = [mib for s in samples if (mib := gpu_mem_total_mib(s)) is not None]
    if not used:
        return NONE
    return f"{sum(used) / 1024:.1f}/{sum(total) / 1024:.0f}Gi"
