"""`rlark get jobs|tasks|pods|nodes|domains|workflows|clusters [NAME...]`: list or show objects like kubectl get
(clusters: the member clusters summed from Node CRs, commands/nodeinfo.py).

Owns the flags (-A, -n, -l, -o) and printing; rendering goes through cluster.output (one table per kind there).
Reading goes through the lean client (cluster/lean.py: no `kubernetes` import) when the context is a plain one
and the command reads only the control plane; `-w`, `-o wide` of jobs and pods (progress, restarts through
rlark-server) and contexts with exec plugins or auth providers go through ClusterAccess.
"""

from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from rlark_tui.cluster.errors import ApiError, NotFound, Unreachable
from rlark_tui.cluster.kinds import JOBS, NODES, PODS, TASKS, Kind, kind_named
from rlark_tui.cluster.lean import LeanClient
from rlark_tui.errors import UsageError
from rlark_tui.local.startup import collector_paused

# cluster.output (the tables) and what it pulls in load while the server answers the list (see show)
FORMATS = ("table", "wide", "json", "yaml", "name")

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.http import LineStream

EXIT_CODES = """exit codes:
  0    printed (an empty list prints "No resources found" on stderr); -w: ended by --request-timeout
  1    API or connection error, or a named object was not found (-w: only when the first list fails)
  2    usage error (bad flag, unknown resource type, unusable kubeconfig)
  130  -w interrupted (Ctrl-C)

With -w a dropped watch prints "-- watch interrupted: <why>; reconnecting" on stderr and resumes from the
last resourceVersion (a full relist after 410 Gone, which prints only the objects that changed meanwhile)."""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "get", parents=parents, help="list jobs, tasks, pods, nodes, domains, workflows or clusters",
        description="List rlinf.io objects of the control plane, like `kubectl get`.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("resource", metavar="RESOURCE",
                        help="jobs, tasks, pods, nodes, domains, workflows, or clusters (the member clusters: nodes "
                             "online, GPUs free/total by model, running Jobs, region)")
    parser.add_argument("names", metavar="NAME", nargs="*", help="only these objects")
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="all cluster namespaces")
    parser.add_argument("-n", "--namespace", metavar="NS", help="namespace of tasks, pods or nodes")
    parser.add_argument("-l", "--selector", metavar="SELECTOR", help="label selector, e.g. rlinf.io/job=demo")
    parser.add_argument("-o", "--output", default="table", choices=FORMATS,
                        help="output format (default: table)")
    parser.add_argument("-w", "--watch", action="store_true",
                        help="after the list, print each change as it happens (Ctrl-C ends; so does "
                             "--request-timeout)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rlark_tui.cluster.contexts import chosen
    contexts = chosen(args)
    if contexts is not None:
        return run_contexts(args, contexts)
    if args.resource in ("clusters", "cluster"):
        from rlark_tui.commands.nodeinfo import get_clusters
        return get_clusters(args, reader(args, NODES))
    kind = kind_named(args.resource)
    access = reader(args, kind)
    if not isinstance(access, LeanClient):
        return show(access, kind, args)
    from rlark_tui.cli import ExitAtOnce
    # A one-shot read makes no garbage cycles worth collecting; the cycle collector would only walk the decoded
    # list (300,000 objects for 5,000 Jobs) again in each generation while the rows are built (local/startup.py).
    with collector_paused():
        # the lean path leaves no thread or file behind: no interpreter teardown after printing
        return ExitAtOnce(show(access, kind, args))


@dataclass
class Listed:
    """What one context answered: the objects, the namespace read, a line per named object not found, the wide
    columns' cells, and a notice line per read of theirs that left lines out to hold at most its bound or failed."""

    items: list[dict]
    namespace: str | None
    missing: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    related: dict[str, list[dict]] | None = None
    """-o json or yaml of Jobs and Tasks: the answers whose secret env values each object's masking knows, by its
    name (related_answers)."""
    progress: dict[str, str] | None = None
    step_time: dict[str, str] | None = None
    gpu: dict[str, float] | None = None
    health: dict[str, tuple[str, str]] | None = None


def show(access: LeanClient | ClusterAccess, kind: Kind, args: argparse.Namespace) -> int:
    """Read and print what the command asks for; the exit code."""
    if args.watch:
        return watch(_full(access), kind, _namespace(access, kind, args), args)
    listed = read(access, kind, args)
    for line in listed.missing:
        print(f"error: {line}", file=sys.stderr)
    for line in listed.notices:
        print(f"-- {line}", file=sys.stderr)
    status = 1 if listed.missing else 0
    if not listed.items:
        if status == 0:
            where = f" in {listed.namespace} namespace" if listed.namespace else ""
            print(f"No resources found{where}.", file=sys.stderr)
        return status
    from rlark_tui.cluster.output import render_objects, render_table
    if args.output in ("table", "wide"):
        print(render_table(kind, listed.items, wide=args.output == "wide", all_namespaces=args.all_namespaces,
                           progress=listed.progress, health=listed.health, gpu=listed.gpu,
                           step_time=listed.step_time))
    else:
        print(render_objects(kind, listed.items, args.output, single=len(args.names) == 1, related=listed.related))
    return status


def _namespace(access: LeanClient | ClusterAccess, kind: Kind, args: argparse.Namespace) -> str | None:
    if kind.namespaced and not args.all_namespaces:
        return args.namespace or access.namespace or "default"
    return None


def read(access: LeanClient | ClusterAccess, kind: Kind, args: argparse.Namespace) -> Listed:
    """The objects the command names (or the list), with the wide columns' reads for -o wide."""
    namespace = _namespace(access, kind, args)
    listed = Listed([], namespace)
    answer = None
    if args.names:
        for name in args.names:
            try:
                listed.items.append(access.get(kind, name, namespace))
            except NotFound:
                where = f' in namespace "{namespace}"' if namespace else ""
                listed.missing.append(f'{kind.plural} "{name}" not found{where}')
    elif isinstance(access, LeanClient):
        answer = access.send_list(kind, namespace, label_selector=args.selector)
    else:
        answer = partial(access.list, kind, namespace, label_selector=args.selector)
    from rlark_tui.cluster.output import TABLES  # loaded while the server answers
    if isinstance(access, LeanClient) and answer is not None:
        listed.items = answer(TABLES[kind.plural].reads if args.output == "table" else None).items
    elif answer is not None:
        listed.items = answer().items
    if listed.items and args.output in ("json", "yaml") and kind in (JOBS, TASKS):
        try:
            listed.related = related_answers(access, kind)
        except (ApiError, Unreachable) as exc:
            listed.notices.append(unrelated(kind, exc))
    if listed.items and args.output == "wide" and kind is JOBS:
        from rlark_tui.cluster.metrics import wide_log_cells  # only for -o wide (start-up time of a plain get)
        listed.progress, listed.step_time, left_out = wide_log_cells(_full(access), listed.items)
        listed.notices += [f"job {name}: PROGRESS and STEP TIME from its Header log: {said}"
                           for name, said in sorted(left_out.items())]
        from rlark_tui.cluster.usage_reads import job_gpu_percent  # nvidia-smi in the Running GPU Pods
        listed.gpu = job_gpu_percent(_full(access), listed.items)
    if listed.items and args.output == "wide" and kind is PODS:
        from rlark_tui.cluster.podhealth import pod_states  # through rlark-server: only for -o wide
        listed.health = pod_states(_full(access), listed.items)
    return listed


def run_contexts(args: argparse.Namespace, contexts: list[str]) -> int:
    """`rlark get` of several contexts at once: read in parallel (cluster/contexts.py), one table with a CONTEXT
    column; a context that fails or does not answer in time is one `context B: <why>` line on stderr and the
    others print (exit 1 then)."""
    from rlark_tui.cluster.contexts import deadline, fan_out, narrowed

    if args.watch:
        raise UsageError("get -w follows one context; `rlark watch` follows several")
    if args.resource in ("clusters", "cluster"):
        raise UsageError("get clusters reads one context: give --context once")
    kind = kind_named(args.resource)

    def one(context: str) -> Listed:
        narrow = narrowed(args, context)
        access = reader(narrow, kind)
        try:
            return read(access, kind, narrow)
        finally:
            access.close()

    outcomes = fan_out(contexts, one, deadline(args))
    status = 0
    for outcome in outcomes:
        if outcome.error:
            print(f"context {outcome.context}: {outcome.error}", file=sys.stderr)
            status = 1
        for line in outcome.value.missing if outcome.value is not None else ():
            print(f"context {outcome.context}: {line}", file=sys.stderr)
            status = 1
        for line in outcome.value.notices if outcome.value is not None else ():
            print(f"-- context {outcome.context}: {line}", file=sys.stderr)
    answered = [(o.context, o.value) for o in outcomes if o.value is not None]
    if not any(listed.items for _context, listed in answered):
        if status == 0:
            print("No resources found.", file=sys.stderr)
        return status
    from rlark_tui.cluster.output import merged_table, render_objects, table_cells
    if args.output in ("table", "wide"):
        print(merged_table([(context, *table_cells(
            kind, listed.items, wide=args.output == "wide", all_namespaces=args.all_namespaces,
            progress=listed.progress, health=listed.health, gpu=listed.gpu, step_time=listed.step_time))
            for context, listed in answered if listed.items]))
    else:
        related: dict[str, list[dict]] = {}
        for _context, listed in answered:
            for name, tasks in (listed.related or {}).items():
                related.setdefault(name, []).extend(tasks)
        print(render_objects(kind, [item for _context, listed in answered for item in listed.items], args.output,
                             related=related))
    return status


def related_answers(access: LeanClient | ClusterAccess, kind: Kind) -> dict[str, list[dict]]:
    """What the masking of each Job or Task of -o json|yaml also knows, by the object's name: a Job's Tasks (label
    rlinf.io/job), a Task's Job and that Job's Tasks. A control plane that renamed a secret env entry in one of
    them (`0` for WANDB_API_KEY) had its value printed where the others name it."""
    from rlark_tui.model import keys
    from rlark_tui.model.objects import dig

    by_job: dict[str, list[dict]] = {}
    for task in access.list(TASKS, None).items:
        job = dig(task, "metadata", "labels", keys.JOB_LABEL)
        if isinstance(job, str):
            by_job.setdefault(job, []).append(task)
    if kind is JOBS:
        return by_job
    jobs: dict[str, list[dict]] = {}
    for job in access.list(JOBS, None).items:
        name = dig(job, "metadata", "name")
        if isinstance(name, str):
            jobs.setdefault(name, []).append(job)
    related: dict[str, list[dict]] = {}
    for job_name, tasks in by_job.items():
        answers = [*jobs.get(job_name, ()), *tasks]
        for task in tasks:
            name = dig(task, "metadata", "name")
            if isinstance(name, str):
                related.setdefault(name, []).extend(answers)
    return related


def unrelated(kind: Kind, exc: Exception) -> str:
    """The notice line of a related_answers read that failed."""
    read = "Tasks" if kind is JOBS else "Jobs and Tasks"
    return f"{read} not read, so each {kind.plural[:-1].capitalize()} is masked knowing only its own secret env " \
           f"values: {exc}"


def _full(access: LeanClient | ClusterAccess) -> ClusterAccess:
    """The ClusterAccess `reader` picks for --watch and for -o wide of Jobs and Pods (the lean client reads neither)."""
    if isinstance(access, LeanClient):
        raise TypeError("this read needs ClusterAccess, which reader() picks for it")
    return access


def reader(args: argparse.Namespace, kind: Kind) -> LeanClient | ClusterAccess:
    """The lean client when it can answer the whole command, else ClusterAccess."""
    if not args.watch and not (args.output == "wide" and kind in (JOBS, PODS)):
        lean = LeanClient.from_args(args)
        if lean is not None:
            return lean
    from rlark_tui.cluster.access import ClusterAccess
    return ClusterAccess.from_args(args)


def watch(access: ClusterAccess, kind, namespace: str | None, args: argparse.Namespace) -> int:
    """kubectl get -w: the list, then one row (or object) per change; dropped watches resume by themselves."""
    from rlark_tui.cluster.output import render_objects, render_table
    from rlark_tui.model.objects import dig
    from rlark_tui.text.redact import redact_object, redact_related
    from rlark_tui.text.sanitize import json_dumps

    if len(args.names) > 1:
        raise UsageError("--watch takes at most one NAME")
    related: dict[str, list[dict]] = {}
    if kind in (JOBS, TASKS) and args.output in ("json", "yaml"):  # as the watch starts, as -o json|yaml knows them
        try:
            related = related_answers(access, kind)
        except (ApiError, Unreachable) as exc:
            print(f"-- {unrelated(kind, exc)}", file=sys.stderr, flush=True)

    def redacted(item: dict) -> object:
        name = dig(item, "metadata", "name")
        tasks = related.get(name) if isinstance(name, str) else None
        return redact_related(item, tasks) if tasks else redact_object(item)

    stop = threading.Event()
    streams: list[LineStream] = []

    def expire() -> None:
        stop.set()
        for stream in streams:
            stream.abort()

    if args.request_timeout:
        timer = threading.Timer(args.request_timeout, expire)
        timer.daemon = True
        timer.start()
    field = f"metadata.name={args.names[0]}" if args.names else None
    header = True
    printed: dict[tuple[str, str], str] | None = None
    try:
        for event in access.list_watch(kind, stop, namespace, args.selector, on_stream=streams.append,
                                       field_selector=field):
            if event.type == "ERROR":
                if printed is None and event.error is not None:
                    raise event.error
                print(f"-- watch interrupted: {event.error}; reconnecting", file=sys.stderr, flush=True)
                continue
            if event.type == "RELIST":
                before, printed = printed or {}, {_key(item): _version(item) for item in event.items}
                items = [item for item in event.items if before.get(_key(item)) != _version(item)]
            else:
                items = [event.obj] if event.obj else []
                if printed is None:
                    printed = {}
                printed.update({_key(item): _version(item) for item in items})
            if not items:
                continue
            if args.output in ("table", "wide"):
                text = render_table(kind, items, wide=args.output == "wide", all_namespaces=args.all_namespaces)
                lines = text.splitlines()
                print("\n".join(lines if header else lines[1:]), flush=True)
                header = False
            elif args.output == "json":
                for item in items:
                    print(json_dumps(redacted(item), ensure_ascii=False), flush=True)
            else:
                print(render_objects(kind, items, args.output, related=related) + (
                    "\n---" if args.output == "yaml" else ""), flush=True)
    except KeyboardInterrupt:
        return 130
    finally:
        stop.set()
    return 0


def _key(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _version(obj: dict) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
