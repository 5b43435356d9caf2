"""Several control planes at once: which contexts `--context A --context B` or `--all-contexts` name, and one
read per context in parallel, each bounded in time, so that a context that fails or is slow never holds up the
others (`rlark get|watch|status|top` and the TUI).

Contexts come from the kubeconfig files KUBECONFIG lists, merged as kubectl merges them (cluster/kubeconfig.py:
the first file's entry of a name wins), in the merged order.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rlark_tui.cluster import kubeconfig as kc
from rlark_tui.cluster.transport import READ_TIMEOUT, request_timeout
from rlark_tui.errors import RlarkError, UsageError

T = TypeVar("T")

PARALLEL_CONTEXTS = 8
"""At most this many contexts are read at once."""
GRACE_SECONDS = 5.0
"""A context's read may take its request timeout plus this long before it is reported slow and left behind."""
MAX_CONTEXTS = 256
"""The most contexts --all-contexts reads: each is a connection and a thread (20,000 contexts in a kubeconfig
from someone else held rlark get past its deadline at 1.4 GB)."""


def chosen(args: argparse.Namespace) -> list[str] | None:
    """The contexts to read at once, in order: every one with --all-contexts, else those --context named more
    than once; None for one context (the single-context path, unchanged). The kubeconfig read for --all-contexts
    is kept in `args.kubeconfig_read`, for every context's client (`narrowed` copies it): each reading it again
    parsed the files once per context, 256 of them 17 s of CPU past rlark get's deadline."""
    named = list(dict.fromkeys(getattr(args, "contexts", None) or ()))
    if not getattr(args, "all_contexts", False):
        return named if len(named) > 1 else None
    if named:
        raise UsageError("--all-contexts reads every context: give it without --context")
    loaded = kc.load(getattr(args, "kubeconfig", None))
    if loaded.in_cluster:
        raise UsageError("--all-contexts needs kubeconfig files (KUBECONFIG, --kubeconfig or ~/.kube/config)")
    if len(loaded.contexts) > MAX_CONTEXTS:
        raise UsageError(f"--all-contexts reads at most {MAX_CONTEXTS} contexts and the kubeconfig has "
                         f"{len(loaded.contexts):,}: name the ones to read with --context A --context B")
    args.kubeconfig_read = loaded
    return list(loaded.contexts)


def narrowed(args: argparse.Namespace, context: str) -> argparse.Namespace:
    """`args` for one of the contexts: the single-context flags every command reads."""
    one = argparse.Namespace(**vars(args))
    one.context, one.contexts, one.all_contexts = context, [context], False
    return one


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """One context's read: its value, or why there is none (`error`, one line)."""

    context: str
    value: T | None = None
    error: str = ""


def deadline(args: argparse.Namespace) -> float:
    """How long one context's read may take before it is left behind."""
    return (request_timeout(args) or READ_TIMEOUT) + GRACE_SECONDS


def fan_out(contexts: Sequence[str], read: Callable[[str], T], within: float,
            workers: int = PARALLEL_CONTEXTS) -> list[Outcome[T]]:
    """`read(context)` for every context, at most `workers` at once, in daemon threads; the outcomes in the
    contexts' order once all are done or `within` seconds have passed: a read still under way then is an
    outcome of its own (`no answer within N s`) and is left to end by itself. An RlarkError or OSError is that
    context's error; any other exception (a bug) is raised here."""
    slots = threading.BoundedSemaphore(max(1, workers))
    outcomes: dict[str, Outcome[T]] = {}
    bugs: list[BaseException] = []
    lock = threading.Lock()

    def one(context: str) -> None:
        with slots:
            try:
                result = Outcome(context, value=read(context))
            except (RlarkError, OSError) as exc:
                result = Outcome(context, error=str(exc) or type(exc).__name__)
            except Exception as exc:  # noqa: BLE001 - raised again on the caller's thread
                bugs.append(exc)
                return
        with lock:
            outcomes[context] = result

    threads = [threading.Thread(target=one, args=(name,), name=f"rlark-context-{index}", daemon=True)
               for index, name in enumerate(contexts)]
    for thread in threads:
        thread.start()
    end = time.monotonic() + within
    for thread in threads:
        thread.join(max(0.0, end - time.monotonic()))
    if bugs:
        raise bugs[0]
    with lock:
        return [outcomes.get(name) or Outcome(name, error=f"no answer within {within:.0f} s") for name in contexts]
