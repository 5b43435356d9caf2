"""`rlark wait JOB --for phase=PHASE|progress=N|check=pass [--timeout 30m] [--keep-waiting]`, as `kubectl wait`:
exit 0 once reached, 1 with the reason once it can no longer happen, 2 on timeout (and on a usage error).

Fails early (issue 34 item 4): RLark's phases cannot say a run is dead (a crash-looping StatefulSet Task stays
Running), so for phase=Succeeded, progress=N and check=pass the alert rules run on the Job meanwhile (the
reconciler's `alerts` topic, headless on a thread, as `rlark watch` runs it) and a critical alert of FAIL_EARLY
ends the wait with exit 1, the alert and the diagnosis's first failure."""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from rlark_tui.cluster.errors import ApiError, NotFound, Unreachable
from rlark_tui.cluster.logmerge import parse_duration
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.model.objects import Job
from rlark_tui.text.parse import ascii_int

if TYPE_CHECKING:
    from rlark_tui.alerting.rules import Alert

PHASES = ("Pending", "Running", "Stopped", "Succeeded", "Failed")
FINAL = ("Succeeded", "Failed")
"""The platform never leaves these (a Job there is finished; Stopped can be started again)."""
FAIL_EARLY = ("run-crashed", "run-oom", "pod-oomkilled", "pod-backoff", "job-failed")
"""The critical alerts after which phase=Succeeded, progress=N and check=pass can no longer come."""
PHASE_SECONDS = 1.0
PROGRESS_SECONDS = 10.0
CHECK_SECONDS = 10.0

EXIT_CODES = """exit codes:
  0    the condition was reached
  1    it can no longer happen (the Job is gone, or finished another way: waiting for Running on a Failed
       Job, for a step past the run's last one, for a passing check on a Job that ended), with the reason
       or, for phase=Succeeded, progress=N and check=pass, a critical alert on the Job (run-crashed, run-oom,
       pod-oomkilled, pod-backoff, job-failed), with the alert and the diagnosis's first failure (`rlark
       diagnose`); --keep-waiting waits on through those
  2    timed out (default --timeout 30m), or a usage error

--for check=pass waits for the run check's rows 1-5 to pass (row 6 is the hand-over, see `rlark check`)."""


class Impossible(RlarkError):
    """The condition can no longer be reached (exit 1)."""


class TimedOut(RlarkError):
    """The time given passed first (exit 2)."""

    exit_code = 2


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "wait", parents=parents, help="wait until a Job reaches a phase, a progress step or a passing check",
        description="Wait for one condition of a Job, as `kubectl wait` does.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", metavar="JOB")
    parser.add_argument("--for", dest="condition", metavar="CONDITION", required=True,
                        help="phase=PHASE (Pending, Running, Stopped, Succeeded, Failed), progress=N (the Header "
                             "log's Global Step reaches N) or check=pass")
    parser.add_argument("--timeout", metavar="DURATION", default="30m", help="give up after this long (30s, 5m, 1h)")
    parser.add_argument("--keep-waiting", action="store_true",
                        help="wait on through a critical alert (a run that crashed may be restarted and recover)")
    parser.set_defaults(handler=run)


def parse_condition(text: str) -> tuple[str, str | int]:
    what, eq, value = text.partition("=")
    if what == "phase" and eq:
        for phase in PHASES:
            if value.lower() == phase.lower():
                return "phase", phase
        raise UsageError(f"--for phase={value}: one of {', '.join(PHASES)}")
    if what == "progress" and eq:
        step = ascii_int(value)
        if step is None or step < 1:
            raise UsageError(f"--for progress={value}: a step number of 1 or more")
        return "progress", step
    if what == "check" and value == "pass":
        return "check", "pass"
    raise UsageError(f"--for {text}: expected phase=PHASE, progress=N or check=pass")


def run(args: argparse.Namespace) -> int:
    from rlark_tui.cluster.access import ClusterAccess

    what, target = parse_condition(args.condition)
    try:
        timeout = parse_duration(args.timeout) if args.timeout.strip() != "0" else 0
    except UsageError:
        raise UsageError(f"--timeout {args.timeout[:40]!r}: expected a duration like 30s, 5m or 1h30m") from None
    deadline = time.monotonic() + timeout
    access = ClusterAccess.from_args(args)
    alerts = None
    if not args.keep_waiting and (what != "phase" or target == "Succeeded"):
        alerts = CriticalAlerts(access, args.job)
    try:
        message = _wait(access, args.job, what, target, deadline, alerts)
    finally:
        if alerts is not None:
            alerts.stop()
        access.close()
    print(message)
    return 0


def _job(access, name: str) -> Job:
    try:
        return access.job(name)
    except NotFound:
        raise Impossible(f"Job {name} does not exist") from None


class CriticalAlerts:
    """The alert rules on one Job, run headless on a thread: `fired` is the first critical alert of FAIL_EARLY
    firing on it, and `changed` is set when it comes."""

    def __init__(self, access, name: str) -> None:
        from rlark_tui.flow import alertpoll
        from rlark_tui.flow.reconciler import Reconciler

        self.name = name
        self.key = alertpoll.scope_key([name])
        self.fired: Alert | None = None
        self.changed = threading.Event()
        self.reconciler = Reconciler(access)
        self.reconciler.subscribe(alertpoll.ALERTS, self.key)
        self._thread = threading.Thread(target=self._run, name="rlark-wait-alerts", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from rlark_tui.local.crash import run_async
        run_async(self.reconciler.run(self._post))

    def _post(self, published) -> None:
        from rlark_tui.alerting.rules import CRITICAL, AlertsState

        state = published.snapshot.alerts.get(self.key)
        if self.fired is not None or not isinstance(state, AlertsState):
            return
        for alert in state.book.firing():
            if alert.rule in FAIL_EARLY and alert.severity == CRITICAL and alert.job == self.name:
                self.fired = alert
                self.changed.set()
                return

    def stop(self) -> None:
        self.reconciler.stop()
        self._thread.join(timeout=5)


def _failed_early(access, name: str, alert: Alert) -> Impossible:
    """The alert, and the first failure as `rlark diagnose` finds it (and keeps it)."""
    from rlark_tui.local.config import state_dir
    from rlark_tui.raydash.diagnose import diagnose

    error = Impossible(f"job {name}: critical alert {alert.rule} on {alert.object}: {alert.message}")
    try:
        failure = diagnose(access, name, state_dir()).diagnosis.first_failure
    except (RlarkError, ApiError, Unreachable) as exc:
        error.add_note(f"(no diagnosis: {exc})")
        return error
    if failure:
        error.add_note(f"first failure: {failure.summary}")  # a line of its own (cli.main)
    return error


def _wait(access, name: str, what: str, target, deadline: float, alerts: CriticalAlerts | None = None) -> str:
    interval = {"phase": PHASE_SECONDS, "progress": PROGRESS_SECONDS, "check": CHECK_SECONDS}[what]
    last = "no answer yet"
    while True:
        try:
            done, last = STEPS[what](access, name, target)
        except (ApiError, Unreachable) as exc:
            if isinstance(exc, NotFound):
                raise Impossible(f"Job {name} does not exist") from None
            last = str(exc)
            done = False
        if done:
            return last
        if alerts is not None and alerts.fired is not None:
            raise _failed_early(access, name, alerts.fired)
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimedOut(f"timed out waiting for {name}: {last}")  # cli.main's one line: `last` quotes the cluster
        if alerts is not None:
            alerts.changed.wait(min(interval, left))
        else:
            time.sleep(min(interval, left))


def _phase(access, name: str, phase: str) -> tuple[bool, str]:
    job = _job(access, name)
    now = job.phase or "Pending"
    if now == phase:
        return True, f"job {name} is {now}"
    if now in FINAL:
        raise Impossible(f"job {name} is {now}" + (f" ({job.message})" if job.message else "")
                         + f": it can no longer become {phase}")
    return False, f"job {name} is {now}, not {phase}"


def _progress(access, name: str, step: int) -> tuple[bool, str]:
    from rlark_tui.cluster.metrics import MetricsUnavailable, find_header, read_progress

    job = _job(access, name)
    try:
        header = find_header(access, name)
        row, left_out = read_progress(access, header.cluster, header.pod)
    except MetricsUnavailable as exc:
        row, why = None, str(exc)
    else:
        why = f"no progress row in the Header log {f'read ({left_out})' if left_out else 'yet'}"
    if row is not None and row.step >= step:
        return True, f"job {name} reached step {row.step}/{row.total}"
    if row is not None and row.total and row.total < step:
        raise Impossible(f"job {name} runs {row.total} steps: step {step} will never come")
    if job.phase in FINAL:
        raise Impossible(f"job {name} is {job.phase}" + (f" at step {row.step}/{row.total}" if row else "")
                         + f": it will not reach step {step}")
    return False, f"job {name} is at step {row.step}/{row.total}" if row else why


def _check(access, name: str, _target) -> tuple[bool, str]:
    from rlark_tui.checks import evaluate
    from rlark_tui.checks.gather import gather
    from rlark_tui.local.config import state_dir

    job = _job(access, name)
    report = evaluate(gather(access, name, state_dir()))
    rows = report.rows[:5]
    failed = [row for row in rows if row.result == "fail"]
    if not failed and all(row.result == "pass" for row in rows):
        return True, f"job {name}: checks 1-5 pass"
    if failed and job.phase in FINAL:
        first = failed[0]
        reason = first.findings[0].message if first.findings else first.title
        raise Impossible(f"job {name} is {job.phase} and check {first.id} fails: {reason}")
    waiting = [str(row.id) for row in rows if row.result != "pass"]
    return False, f"job {name}: checks {', '.join(waiting)} not passing yet"


STEPS: Mapping[str, Callable[[Any, str, Any], tuple[bool, str]]] = MappingProxyType(
    {"phase": _phase, "progress": _progress, "check": _check})
"""--for kind -> one look (access, Job name, the kind's target: a phase, a step or none): (done, what it saw)."""
