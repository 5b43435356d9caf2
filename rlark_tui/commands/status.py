"""`rlark status [--tmux]`: Jobs Running / Failed and firing alerts in one short segment for tmux's `status-right`
(`rlark ▶3 ✗1 ⚠2`), answered at once from a cache in the state dir and never hanging. `rlark status --long` lists
what needs attention instead (view/overview.py, the TUI's `:overview`), reading the cluster at once.

The answer comes from a cache in the state dir, one per choice of kubeconfig files and contexts (`cache_files`:
the plain `rlark status` keys it by the files kubectl reads and their current context); when it is older than
FRESH_SECONDS a detached `rlark status --refresh` lists the Jobs (and reads the alert counts a running TUI or
`rlark watch` leaves in `alerts-summary.json`) for the next call, so a slow or unreachable cluster only makes the segment older (`?` after STALE_SECONDS), never slow.
Only the standard library is imported on the answering path.

With several contexts (`--context A --context B`, `--all-contexts`) the refresher lists each in parallel
(cluster/contexts.py) into a cache of its own for that choice: the counts are summed, and `○N` says how many
contexts did not answer (the long form names them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rlark_tui.text.parse import SMALL_JSON_BYTES, load_json

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.lean import LeanClient
    from rlark_tui.view.index import SnapshotIndex

SUMMARY = "alerts-summary.json"
"""Firing alert counts, written by every running alert evaluator (TUI, `rlark watch`): acks.write_summary."""
FRESH_SECONDS = 10.0
STALE_SECONDS = 120.0
SUMMARY_SECONDS = 120.0
REFRESH_TIMEOUT = 10.0


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "status", parents=parents, help="Running / Failed Jobs and firing alerts in one line (tmux status-right)",
        description="Jobs Running (▶), Failed (✗) and firing warning/critical alerts (⚠, from a running TUI or "
                    "`rlark watch`), from a cache refreshed in the background: it answers at once and never hangs.",
        epilog="tmux.conf:  set -g status-right '#(rlark status --tmux)'  (with set -g status-interval 15)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--tmux", action="store_true", help="only the short segment, for status-right")
    form.add_argument("-l", "--long", action="store_true",
                      help="what needs attention now, one line each, as the TUI's :overview: offline or cordoned "
                           "Nodes and disk pressure, Pending or unschedulable Jobs and why, firing alerts (from a "
                           "running TUI or `rlark watch`), failing or stale check summaries (lists at once)")
    parser.add_argument("--refresh", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(handler=run, native=False)


def _state_dir() -> Path:
    override = os.environ.get("RLARK_STATE_DIR")
    if override:
        return Path(override)
    from rlark_tui.local.config import state_dir
    return state_dir()


MAX_CACHE_BYTES = 1024 * 1024
"""The cache and the alert summary read back (rlark writes a few KiB)."""


def _read(path: Path) -> dict:
    """The cache or summary as rlark wrote it; {} for anything else (fsutil.read_own: a FIFO, a device or another
    user's file in a shared state directory never hangs tmux's status line nor is believed)."""
    from rlark_tui.local.fsutil import read_own

    try:
        text = read_own(path, MAX_CACHE_BYTES).decode("utf-8")
        if len(text) > SMALL_JSON_BYTES:  # read by orjson, imported as the entry point imports it
            from rlark_tui.local.startup import import_native
            import_native()
        data = load_json(text)
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _count(data: dict, key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _files(args: argparse.Namespace) -> tuple[str, str]:
    """The cache and lock of the contexts the flags choose (`cache_files`)."""
    return cache_files(getattr(args, "kubeconfig", None), getattr(args, "contexts", None) or (),
                       getattr(args, "all_contexts", False))


def cache_files(kubeconfig: str | None, contexts: Iterable[str] = (), all_contexts: bool = False,
                environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """The cache and lock of a choice of kubeconfig files and contexts: the files kubectl would read (--kubeconfig,
    else $KUBECONFIG's list, else ~/.kube/config, each made absolute) and the contexts named, or every context, or
    else the current context those files set, so one tmux line per cluster shows that cluster's counts, and a
    pane whose KUBECONFIG, or whose kubeconfig's current context, names another cluster reads a cache of its own
    (it read the last refreshed cluster's counts as its own)."""
    names = list(dict.fromkeys(contexts))
    paths = _kubeconfig_paths(kubeconfig, environ)
    if all_contexts:
        names = ["--all-contexts"]
    elif not names:
        names = [f"--current-context={_current_context(paths)}"]
    chosen = "\n".join([os.pathsep.join(paths), *names])
    key = _digest(chosen.encode("utf-8", "surrogateescape"))
    return f"status-cache-{key}.json", f"status-refresh-{key}.lock"


def _digest(data: bytes) -> str:
    """12 hex digits of the interpreter's own BLAKE2b: hashlib's import loads OpenSSL, a good part of each `rlark
    status --tmux` (bench alerts' status_tmux_s), which tmux runs every few seconds (an interpreter built without
    it: hashlib's SHA-256)."""
    try:
        from _blake2 import blake2b
    except ImportError:
        from hashlib import sha256
        return sha256(data).hexdigest()[:12]
    return blake2b(data, digest_size=6).hexdigest()


def _kubeconfig_paths(flag: str | None, environ: Mapping[str, str]) -> list[str]:
    """The kubeconfig files kubectl reads (cluster.kubeconfig.kubeconfig_paths' order), absolute, whether or not
    they exist: the answering path imports no more than the standard library."""
    listed = [flag] if flag else [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p] or \
        [os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".kube", "config")]
    from rlark_tui.local.fsutil import absolute

    return [absolute(os.path.expanduser(path)) for path in listed]


MAX_KUBECONFIG_SCAN = 16 * 2**20
"""The bytes of each kubeconfig file searched for its current-context (cluster.kubeconfig's bound)."""
_CURRENT = re.compile(r"""^[ \t{]*["']?current-context["']?[ \t]*:[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s#,}]*))""",
                      re.MULTILINE)


def _current_context(paths: list[str]) -> str:
    """The current-context of the first file that sets one (kubectl's rule), as the file spells it at the start of
    a line (YAML's or JSON's); "" when none does. Only a regular file is read, without waiting (a FIFO given as
    --kubeconfig is the refresher's to read, and a FIFO or device another user planted never holds tmux's status
    line)."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            with os.fdopen(os.dup(fd), "rb") as file:
                found = _CURRENT.search(file.read(MAX_KUBECONFIG_SCAN).decode("utf-8", "surrogateescape"))
        except OSError:
            continue
        finally:
            os.close(fd)
        value = next((group for group in found.groups() if group), "") if found else ""
        if value:
            return value
    return ""


def _written(data: dict, now: float) -> float | None:
    """When the cache or summary was written (clock.written_at: None when no number, or later than now)."""
    from rlark_tui.model.clock import written_at
    return written_at(data.get("time"), now)


def _unreachable(cache: dict) -> list[str]:
    names = cache.get("unreachable")
    return [str(name) for name in names] if isinstance(names, list) else []


def segment(cache: dict, summary: dict, now: float) -> str:
    """`rlark ▶3 ✗1 ⚠2`; `⚠` only when an evaluator reported lately; `○N` when N of several contexts did not
    answer; `?` when the Job counts are old or missing."""
    running, failed = _count(cache, "running"), _count(cache, "failed")
    at = _written(cache, now)
    parts = ["rlark"]
    if running is None or failed is None:
        parts.append("?")
    else:
        parts += [f"▶{running}", f"✗{failed}"]
    summary_at = _written(summary, now)
    alerts = _count(summary, "alerts")
    if alerts is not None and summary_at is not None and now - summary_at <= SUMMARY_SECONDS:
        parts.append(f"⚠{alerts}")
    if _unreachable(cache):
        parts.append(f"○{len(_unreachable(cache))}")
    if running is not None and (at is None or now - at > STALE_SECONDS):
        parts.append("?")
    return " ".join(parts)


def _spawn_refresh(root: Path, argv: list[str], lock_name: str) -> str | None:
    """Start one detached refresher unless one started within REFRESH_TIMEOUT: the lock (`cache_files`) holds the
    running refresher's pid. Why none could start (the state dir refused: its lock, and so its cache, cannot be
    written), else None."""
    from rlark_tui.errors import RlarkError
    from rlark_tui.local.fsutil import write_private
    from rlark_tui.local.selfrun import python_module
    lock = root / lock_name
    try:  # a lock dated later than now (the clock set back since) is no refresher under way
        if 0 <= time.time() - lock.stat().st_mtime < REFRESH_TIMEOUT:
            return None
    except OSError:
        pass
    try:
        write_private(lock, b"%d" % os.getpid(), durable=False)  # bytes: no text.sinks to import for a number
        child = subprocess.Popen(python_module("rlark_tui", *argv, "--refresh"), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        write_private(lock, b"%d" % child.pid, durable=False)
    except RlarkError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot start a refresh in {root}: {exc.strerror or exc}"
    return None


def _global_argv(args: argparse.Namespace) -> list[str]:
    argv = []
    for flag in ("kubeconfig", "request_timeout", "server_address", "server_hostname", "client_cert",
                 "client_key", "ca_cert"):
        value = getattr(args, flag, None)
        if value is not None:
            argv += [f"--{flag.replace('_', '-')}", str(value)]
    for name in getattr(args, "contexts", None) or ([args.context] if getattr(args, "context", None) else []):
        argv += ["--context", str(name)]
    for flag in ("server_insecure_skip_tls_verify", "all_contexts"):
        if getattr(args, flag, False):
            argv.append(f"--{flag.replace('_', '-')}")
    return argv + ["status"]


def refresh(args: argparse.Namespace, root: Path) -> int:
    """List the Jobs (bounded in time; through the lean client when the context allows) and write the cache; the
    lock goes when done."""
    from rlark_tui.cluster.contexts import chosen, deadline, fan_out, narrowed
    from rlark_tui.local.fsutil import remove_quietly, write_private

    cache, lock = _files(args)
    try:
        if getattr(args, "request_timeout", None) is None:
            args.request_timeout = REFRESH_TIMEOUT
        contexts = chosen(args)
        unreachable = []
        if contexts is None:
            phases = _phases(args)
        else:
            phases = []
            for outcome in fan_out(contexts, lambda name: _phases(narrowed(args, name)), deadline(args)):
                phases += outcome.value or []
                if outcome.value is None:
                    unreachable.append(outcome.context)
            if len(unreachable) == len(contexts):
                return 1
        counts: dict[str, object] = {"time": time.time(), "running": phases.count("Running"),
                                     "failed": phases.count("Failed")}
        if contexts is not None:
            counts["unreachable"] = unreachable
        write_private(root / cache, json.dumps(counts), durable=False)
        return 0
    except Exception:  # noqa: BLE001 - a refresher that cannot list leaves the old answer (shown as old)
        return 1
    finally:
        remove_quietly(root / lock)


def _phases(args: argparse.Namespace) -> list[str]:
    """The phases of the Jobs of the context `args` name (through the lean client when the context allows)."""
    from rlark_tui.cluster.kinds import JOBS
    from rlark_tui.cluster.lean import LeanClient
    from rlark_tui.model.objects import Job

    # the lean client: no `kubernetes` import for a plain context
    access: LeanClient | ClusterAccess | None = LeanClient.from_args(args)
    if access is None:
        from rlark_tui.cluster.access import ClusterAccess
        access = ClusterAccess.from_args(args)
    try:
        return [Job(raw).phase for raw in access.list(JOBS).items]
    finally:
        access.close()


def _attention_index(args: argparse.Namespace) -> SnapshotIndex:
    """The Jobs, Tasks and Nodes of the context `args` name, listed now."""
    from rlark_tui.cluster.kinds import JOBS, NODES, TASKS
    from rlark_tui.cluster.lean import LeanClient
    from rlark_tui.commands.nodeinfo import listed_index

    access: LeanClient | ClusterAccess | None = LeanClient.from_args(args)
    if access is None:
        from rlark_tui.cluster.access import ClusterAccess
        access = ClusterAccess.from_args(args)
    try:
        return listed_index(jobs=access.list(JOBS).items, tasks=access.list(TASKS, None).items,
                            nodes=access.list(NODES, None).items)
    finally:
        access.close()


def long_form(args: argparse.Namespace, root: Path) -> int:
    """`rlark status --long`: list the Jobs, Tasks and Nodes now (of each context chosen, in parallel; one that
    fails is one line on stderr) and print view.overview's lines."""
    from datetime import UTC, datetime

    from rlark_tui.cluster.contexts import chosen, deadline, fan_out, narrowed
    from rlark_tui.cluster.output import table
    from rlark_tui.errors import RlarkError
    from rlark_tui.local.acks import firing_of
    from rlark_tui.view.overview import alert_lines, attention_lines, in_context

    now = time.time()
    when = datetime.fromtimestamp(now, UTC)
    contexts = chosen(args)
    indexes: dict[str, SnapshotIndex] = {}
    if contexts is None:
        indexes[""] = _attention_index(args)
    else:
        for outcome in fan_out(contexts, lambda name: _attention_index(narrowed(args, name)), deadline(args)):
            if outcome.value is not None:
                indexes[outcome.context] = outcome.value
            else:
                print(f"context {outcome.context}: {outcome.error}", file=sys.stderr)
        if not indexes:
            raise RlarkError("no context answered")
    alerts = firing_of(_read(root / SUMMARY), now, SUMMARY_SECONDS)
    if contexts is None:
        lines = attention_lines(indexes[""], when, alerts or [])
    else:  # each alert with its context ('-': from an evaluator that followed one context)
        lines = sorted([in_context(line, alert.context or "-") for alert in alerts or []
                        for line in alert_lines([alert], when)]
                       + [in_context(line, name) for name, index in indexes.items()
                          for line in attention_lines(index, when, [])], key=lambda line: line.key)
    phases = [row.phase for index in indexes.values() for row in index.rows.values()]
    nodes = [node for index in indexes.values() for node in index.nodes]
    counts = ", ".join(f"{phases.count(phase)} {phase}" for phase in ("Running", "Pending", "Failed"))
    down = sum(1 for node in nodes if not node.schedulable)
    print(f"Jobs: {counts}; Nodes: {len(nodes)}, {down} not schedulable")
    if alerts is None:
        print("alerts: no TUI or `rlark watch` evaluated them in the last "
              f"{SUMMARY_SECONDS:.0f} s (start one to see firing alerts here)")
    if lines:
        print(table((["CONTEXT"] if contexts is not None else []) + ["KIND", "OBJECT", "STATE", "WHY", "AGE"],
                    [list(line.cells) for line in lines]))
    else:
        print("Nothing needs attention.")
    return 0


def run(args: argparse.Namespace) -> int:
    root = _state_dir()
    if args.refresh or args.long:
        from rlark_tui.local.startup import import_native
        import_native()
    if args.refresh:
        return refresh(args, root)
    if args.long:
        return long_form(args, root)
    now = time.time()
    cache_name, lock_name = _files(args)
    cache = _read(root / cache_name)
    at = _written(cache, now)
    if at is None or now - at > FRESH_SECONDS:
        why = _spawn_refresh(root, _global_argv(args), lock_name)
        if why is not None:  # on stderr: tmux's line shows stdout alone
            from rlark_tui.text.sinks import one_line
            print(f"rlark status: the Jobs are not refreshed: {one_line(why)}", file=sys.stderr)
    summary = _read(root / SUMMARY)
    text = segment(cache, summary, now)
    from rlark_tui.cli import ExitAtOnce

    # no thread, and the refresher is a process of its own session: no interpreter teardown after printing (tmux
    # runs this every few seconds; bench alerts' status_tmux_s)
    if args.tmux:
        print(text)
        return ExitAtOnce(0)
    when = time.strftime("%H:%M:%S", time.localtime(at)) if at is not None else "never"
    listed = summary.get("counts")
    counts = listed if isinstance(listed, dict) else {}
    detail = ", ".join(f"{name} {value}" for name, value in counts.items() if isinstance(value, int))
    missing = ", ".join(_unreachable(cache))
    print(f"{text}    (Jobs as of {when}" + (f"; firing alerts: {detail}" if detail else "")
          + (f"; not answering: {missing}" if missing else "") + ")")
    return ExitAtOnce(0)
