"""`rlark watch [JOB…] [-A] [-o json]`: one timestamped line per alert fired or resolved and per Job phase change,
until interrupted; hooks per event (`--exec`, `--webhook`).

The TUI's own reconciler runs headless: the same list+watch, the same `alerts` topic (alertpoll.py) and the same
rules, thresholds from the config file's `alerts:` section, overridden by the flags of the same names.

When a critical alert of `rlark wait`'s FAIL_EARLY fires on a Job (its run crashed), the Job's first failure is read
and kept at once, as `rlark diagnose` reads and keeps it (raydash/diagnose.py): a later `rlark diagnose`, the TUI's
Diagnosis card and `rlark bundle` still have it after the Pods restarted or `rlark stop` deleted them.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import signal
import sys
import threading
import time
from functools import partial
from typing import TYPE_CHECKING

from rlark_tui.alerting import rules
from rlark_tui.alerting.thresholds import FLAGS, Thresholds
from rlark_tui.errors import UsageError
from rlark_tui.flow import alertpoll
from rlark_tui.local import acks, hooks
from rlark_tui.local.config import state_dir
from rlark_tui.model.objects import Job
from rlark_tui.text.sanitize import json_dumps
from rlark_tui.text.sinks import cut, one_line

if TYPE_CHECKING:
    from collections.abc import Callable

    from rlark_tui.cluster.access import ClusterAccess

EXIT_CODES = """exit codes:
  1    cannot reach the cluster (no kubeconfig, a bad context)
  2    usage error
  130  interrupted (Ctrl-C)
  143  ended by SIGTERM (its hooks closed first)

Lines: `<time> <severity> <rule> <job> <firing|resolved>: <message>` and `<time> phase <job> <old> -> <new>`.
-o json: one object per line, {"time", "severity", "rule", "job", "namespace", "object", "message", "state"}
(a phase change has rule "phase" and its new phase as state). With several contexts (--context given again,
--all-contexts) each line starts with `[<context>]` and each object has "context"; a context that cannot be
opened is one `context B: <why>` line on stderr and the others are watched. Acknowledged alerts (`a` in the TUI's :alerts)
stay quiet. --exec runs COMMAND (split like a shell would, never through one) per event with RLARK_ALERT_TIME,
_SEVERITY, _RULE, _JOB, _NAMESPACE, _OBJECT, _MESSAGE, _STATE set; --webhook POSTs each event. Both retry with
back-off on their own thread and never hold up the reads; a failing hook is reported on stderr once a minute."""


SUMMARY_SECONDS = 30.0


KEEP_SECONDS = 60.0
"""How long one Job's keep holds its place: past it the keep goes on by itself (its reads end on their own timeouts)
and the next Job's keep begins, so a Job whose data plane or Ray head drips its answers delays no other's."""
KEEPS = 2
"""Keeps within their time at once."""
SEEN_FIRINGS = 4096
"""The newest firings a Keeper remembers (one keep per Job per round: the FAIL_EARLY alerts one round fires for a
Job share its time), so that Jobs crashing under new names every second for days hold no more than these."""


class Keeper:
    """Reads and keeps the first failure of each Job a critical FAIL_EARLY alert fires on, on daemon threads (the
    lines never wait for them; Ctrl-C does not either). A Job has at most one keep running and one waiting (a firing
    while its keep runs is kept once more after it, however often it fires); KEEPS keeps run at once, each holding
    its place KEEP_SECONDS at most, said in one line."""

    def __init__(self, keep: Callable[[str], None], report, seconds: float = KEEP_SECONDS,
                 at_once: int = KEEPS) -> None:
        self.report = report
        self.keep = keep
        self.seconds = seconds
        self.at_once = at_once
        self.seen: dict[tuple[str, float], None] = {}
        """The newest SEEN_FIRINGS (Job, fired at), oldest first."""
        self.lock = threading.Condition()
        self.waiting: collections.deque[str] = collections.deque()
        self.running: set[str] = set()
        self.again: set[str] = set()
        self.places = 0
        self.stopped = False
        """Set once the watch has ended (stop): a keep still under way may then fail as the process exits."""
        threading.Thread(target=self._run, name="rlark-watch-keep", daemon=True).start()

    def stop(self) -> None:
        """The watch has ended: a keep that fails from now on (its reads cut short as the interpreter shuts down:
        'cannot schedule new futures after interpreter shutdown') is dropped, not a thread's traceback."""
        self.stopped = True

    def fired(self, alert: rules.Alert) -> None:
        from rlark_tui.commands.wait import FAIL_EARLY

        if alert.rule in FAIL_EARLY and alert.severity == rules.CRITICAL and alert.job \
                and (alert.job, alert.fired_at) not in self.seen:
            self.seen[alert.job, alert.fired_at] = None
            if len(self.seen) > SEEN_FIRINGS:
                del self.seen[next(iter(self.seen))]
            self._queue(alert.job)

    def _queue(self, job: str) -> None:
        with self.lock:
            if job in self.running:
                self.again.add(job)
            elif job not in self.waiting:
                self.waiting.append(job)
                self.lock.notify_all()

    def _run(self) -> None:
        while True:
            with self.lock:
                while not self.waiting or self.places >= self.at_once:
                    self.lock.wait()
                job = self.waiting.popleft()
                self.running.add(job)
                self.places += 1
            threading.Thread(target=self._one, args=(job,), name="rlark-watch-keep-job", daemon=True).start()

    def _one(self, job: str) -> None:
        held = [True]

        def free() -> bool:
            with self.lock:
                if not held[0]:
                    return False
                held[0] = False
                self.places -= 1
                self.lock.notify_all()
                return True

        def overdue() -> None:
            if free():
                self.report(f"the first failure of {one_line(job)} is not read within {self.seconds:g} s (the bound "
                            "of a keep): its read goes on, the other Jobs' are read meanwhile")

        timer = threading.Timer(self.seconds, overdue)
        timer.daemon = True
        timer.start()
        try:
            self.keep(job)
        except Exception:
            if not self.stopped:
                raise  # a bug: the watch runs
        finally:
            timer.cancel()
            free()
            with self.lock:
                self.running.discard(job)
                again = job in self.again
                self.again.discard(job)
            if again:
                self._queue(job)


def keep(access: ClusterAccess, report, job: str) -> None:
    """Read the Job's first failure as `rlark diagnose` does, which keeps it; a failure to read or keep is one line."""
    from rlark_tui.cluster.errors import ApiError, Unreachable
    from rlark_tui.errors import RlarkError
    from rlark_tui.raydash.diagnose import diagnose

    try:
        found = diagnose(access, job, state_dir())
    except (RlarkError, ApiError, Unreachable, OSError) as exc:
        report(f"the first failure of {one_line(job)} could not be read: {exc}")
        return
    for note in found.notes:
        if note.startswith("the evidence could not be kept"):
            report(f"{one_line(job)}: {note}")


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "watch", parents=parents, help="print alerts and phase changes as they happen (hooks, webhooks)",
        description="Evaluate the alert rules for every Job in scope and print each alert fired or resolved "
                    "and each phase change, until interrupted.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("jobs", metavar="JOB", nargs="*", help="only these Jobs (default: all)")
    parser.add_argument("-A", "--all-namespaces", action="store_true",
                        help="every Job (the default without JOB; Jobs are cluster-scoped)")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument("--exec", dest="exec_command", metavar="COMMAND", action="append", default=[],
                        help="run COMMAND per event (RLARK_ALERT_* variables; no shell)")
    parser.add_argument("--webhook", metavar="URL", action="append", default=[], help="POST each event to URL")
    parser.add_argument("--webhook-format", choices=hooks.FORMATS, default="json",
                        help="the webhook body: the JSON line, or a Slack / Feishu / DingTalk text message")
    for name, flag in FLAGS.items():
        parser.add_argument(flag, dest=f"alert_{name}", metavar="N", type=float, default=None,
                            help=f"alerts.{name} (default {getattr(Thresholds(), name):g})")
    parser.set_defaults(handler=run)


def thresholds(args: argparse.Namespace, base: Thresholds) -> Thresholds:
    changed = {}
    for name, flag in FLAGS.items():
        value = getattr(args, f"alert_{name}", None)
        if value is None:
            continue
        if not 0 <= value < 1e9:
            raise UsageError(f"{flag}: must be a number of 0 or more")
        changed[name] = value
    return dataclasses.replace(base, **changed)


class Printer:
    """Turns Snapshots into lines: new events of the alert book, phase changes of the Jobs in scope."""

    def __init__(self, key: str, as_json: bool, hook_list: list[hooks.Hook], out=None, context: str = "",
                 totals: dict[str, tuple[dict[str, int], list[rules.Alert]]] | None = None,
                 keeper: Keeper | None = None, report: Callable[[str], None] | None = None) -> None:
        """`context`: with several contexts, the one this Printer's Snapshots come from (each line starts with
        `[context]`, each record has "context"); `totals`: every context's Printer's firing alerts and counts,
        shared, so that `rlark status` reads them all; `report`: where a control plane that cannot be read is said
        (stderr), once per change."""
        self.context = context
        self.report = report
        self._unread: tuple[str, str] | None = None
        self._connected = False
        self.totals = totals
        self.keeper = keeper
        self.key = key
        self.as_json = as_json
        self.hooks = hook_list
        self.out = out or sys.stdout
        self.seq = 0
        self.phases: dict[str, str] | None = None
        self._jobs = None
        self._counts: tuple[dict[str, int], list[tuple[str, tuple[str, str, str]]]] | None = None
        self._summary_at = float("-inf")

    def snapshot(self, snapshot) -> None:
        self._control_plane(snapshot.sources.get("control plane"))
        if snapshot.jobs is not self._jobs and "jobs" in _listed(snapshot):
            self._jobs = snapshot.jobs
            self._phases(snapshot)
        state = snapshot.alerts.get(self.key)
        if isinstance(state, rules.AlertsState):
            for event in state.book.events_after(self.seq):
                self.emit(event.record(), event.line())
                if self.keeper is not None and event.state == "firing":
                    self.keeper.fired(event.alert)
            self.seq = state.book.seq
            self._summary(state.book.counts(), state.book.firing())

    def _control_plane(self, state) -> None:
        """Say on stderr that the control plane cannot be read (its Jobs, Tasks, Pods or Nodes: no alert can be
        judged without them), and that it is read again, once each: the watch said nothing, whatever the cause (an
        answer refused as too deep or too large, a 500, a lost connection), and printed no alert for good."""
        if state is not None and state.status == "connected":
            self._connected = True
        failing = state is not None and (state.status == "disconnected" or state.status == "stale" and self._connected)
        unread = (state.status, state.reason) if failing else None  # stale before the first list: connecting
        if unread == self._unread or self.report is None:
            return
        where = f"[{self.context}] " if self.context else ""
        if unread is not None:
            self.report(one_line(f"{where}cannot read the control plane, so no alert is judged: {cut(unread[1])}"))
        elif state is not None and state.status == "connected":
            self.report(one_line(f"{where}the control plane is read again"))
        self._unread = unread

    def _summary(self, counts: dict[str, int], firing: list[rules.Alert]) -> None:
        """Leave the firing alerts and their counts for `rlark status` when they change, and every
        SUMMARY_SECONDS (with several contexts, those of all: `totals`)."""
        listed = [(self.context, alert) for alert in firing]
        if self.totals is not None:
            self.totals[self.context] = (counts, firing)
            counts = {}
            for each, _firing in self.totals.values():
                for name, value in each.items():
                    counts[name] = counts.get(name, 0) + value
            listed = sorted(((context, alert) for context, (_counts, found) in self.totals.items() for alert in found),
                            key=lambda pair: (rules.SEVERITIES.index(pair[1].severity), pair[1].fired_at))
        now = time.monotonic()
        seen = (counts, [(context, alert.key) for context, alert in listed])
        if seen != self._counts or now - self._summary_at >= SUMMARY_SECONDS:
            self._counts, self._summary_at = seen, now
            try:
                acks.write_summary(state_dir(), counts, listed)
            except OSError:
                pass

    def _phases(self, snapshot) -> None:
        now = {name: Job(raw).phase or "Pending" for name, raw in snapshot.jobs.items()
               if alertpoll.in_scope(self.key, name)}
        if self.phases is not None:
            namespaces: dict[str, str] | None = None
            for name, phase in now.items():
                old = self.phases.get(name, "")
                if phase != old:
                    if namespaces is None:  # once for all the changes: a relist may change thousands of phases
                        namespaces = {}
                        for key in snapshot.tasks:
                            namespace, _, task = key.partition("/")
                            namespaces.setdefault(task, namespace)
                    head = Job(snapshot.jobs[name]).head_task_name
                    self._phase(name, old, phase, namespaces.get(head, ""))
        self.phases = now

    def _phase(self, name: str, old: str, new: str, namespace: str) -> None:
        at = time.time()
        record = {"time": rules.iso(at), "severity": "info", "rule": "phase", "job": name, "namespace": namespace,
                  "object": name, "message": f"phase {old or '-'} -> {new}", "state": new}
        self.emit(record, f"{rules.iso(at)} phase {name} {old or '-'} -> {new}")

    def emit(self, record: dict, line: str) -> None:
        """One event: its line is a one-line field (sinks.one_line), so a context name from a kubeconfig or a phase
        from a Job's status with a line break in it cannot forge the next event's line; JSON through json_dumps."""
        if self.context:
            record, line = {**record, "context": self.context}, f"[{self.context}] {line}"
        line = one_line(line)
        self.out.write((json_dumps(record, ensure_ascii=False) if self.as_json else line) + "\n")
        self.out.flush()
        for hook in self.hooks:
            hook.post(record, line)


def _listed(snapshot) -> set[str]:
    """The kinds the control plane has listed: Jobs are known once the source is connected or stale."""
    state = snapshot.sources.get("control plane")
    return {"jobs"} if state is not None and (state.status == "connected" or snapshot.jobs) else set()


def _print(printer: Printer, published) -> None:
    printer.snapshot(published.snapshot)


def run(args: argparse.Namespace) -> int:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.contexts import chosen, deadline, fan_out, narrowed
    from rlark_tui.flow.polls import USAGE
    from rlark_tui.flow.reconciler import Reconciler

    def report(text: str) -> None:
        print(f"rlark watch: {text}", file=sys.stderr, flush=True)

    if args.jobs and args.all_namespaces:
        raise UsageError("give Job names or -A, not both")
    thresholds(args, Thresholds())  # bad flag values are refused before anything is contacted
    hook_list = [hooks.webhook(url, args.webhook_format, report) for url in args.webhook]
    hook_list += [hooks.command(text, report) for text in args.exec_command]
    key = alertpoll.scope_key(args.jobs)
    contexts = chosen(args)
    if contexts is None:
        accesses = {"": ClusterAccess.from_args(args)}
    else:
        # several contexts: each opened in parallel; one that cannot be is one line, the others are watched
        accesses = {}
        for outcome in fan_out(contexts, lambda name: ClusterAccess.from_args(narrowed(args, name)),
                               deadline(args)):
            if outcome.value is None:
                print(f"context {outcome.context}: {outcome.error}", file=sys.stderr, flush=True)
            else:
                accesses[outcome.context] = outcome.value
        if not accesses:
            return 1
    totals: dict[str, tuple[dict[str, int], list[rules.Alert]]] | None = {} if contexts is not None else None
    watched = []
    for context, access in accesses.items():
        access.config = dataclasses.replace(access.config, alerts=thresholds(args, access.config.alerts))
        reconciler = Reconciler(access)
        reconciler.subscribe(alertpoll.ALERTS, key)
        reconciler.subscribe(USAGE, key)
        printer = Printer(key, args.output == "json", hook_list, context=context, totals=totals,
                          keeper=Keeper(partial(keep, access, report), report), report=report)
        watched.append((reconciler, printer))

    async def every() -> None:
        await asyncio.gather(*(reconciler.run(partial(_print, printer)) for reconciler, printer in watched))

    ended_by: int = signal.SIGINT

    def interrupted(signum, _frame) -> None:
        nonlocal ended_by
        ended_by = signum
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        from rlark_tui.local.crash import run_async
        run_async(every())
    except KeyboardInterrupt:  # as a shell says a command a signal ended: 130 for Ctrl-C, 143 for SIGTERM
        return 128 + ended_by
    finally:
        for reconciler, printer in watched:
            reconciler.stop()
            if printer.keeper is not None:
                printer.keeper.stop()
        for hook in hook_list:
            hook.close()
        for access in accesses.values():
            access.close()
        signal.signal(signal.SIGTERM, previous)
    return 0
