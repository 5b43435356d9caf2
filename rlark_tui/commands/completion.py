"""`rlark completion bash|zsh|fish`: the shell code for tab completion (argcomplete), and the answering side.
A completing shell runs `rlark` itself with argcomplete's environment; `complete()` then names commands, flags,
contexts, and live Job and Pod names (read within 1 s; nothing at all on any error or timeout)."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.lean import LeanClient

SHELLS = ("bash", "zsh", "fish")
LIVE_SECONDS = 1.0
JOB_ARGUMENTS = ("job", "job_a", "job_b")
SET_UP = """set-up (once per shell; add the line to the shell's start-up file):
  bash:  eval "$(rlark completion bash)"          # ~/.bashrc
  zsh:   eval "$(rlark completion zsh)"           # ~/.zshrc
  fish:  rlark completion fish | source           # ~/.config/fish/config.fish"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "completion", parents=parents, help="print the shell code for tab completion (bash, zsh or fish)",
        description="Print the shell code that completes rlark's commands, flags, contexts and live Job and Pod "
                    "names.", epilog=SET_UP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shell", choices=SHELLS)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import argcomplete
    sys.stdout.write(argcomplete.shellcode(["rlark"], shell=args.shell))
    return 0


def complete(parser: argparse.ArgumentParser) -> None:
    """Answer the completion request in the environment and exit (argcomplete's protocol)."""
    import argcomplete
    for action in _actions(parser):
        completer = _completer_for(action)
        if completer is not None:
            action.completer = completer  # type: ignore[attr-defined]  # argcomplete's own attribute on an Action
    argcomplete.autocomplete(parser, always_complete_options=False)


def _actions(parser: argparse.ArgumentParser) -> Iterable[argparse.Action]:
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                yield from _actions(sub)


def _completer_for(action: argparse.Action) -> Callable | None:
    if action.dest == "context":
        return contexts
    if action.dest in JOB_ARGUMENTS or (action.dest == "name" and action.metavar == "NAME"):
        return jobs
    if action.dest == "pod":
        return pods
    if action.dest == "names":
        return lambda prefix, parsed_args, **_: (
            jobs(prefix, parsed_args) if str(getattr(parsed_args, "resource", "")).startswith("job") else [])
    return None


def live(read: Callable[[], Iterable[str]]) -> list[str]:
    """`read()`'s names a shell may be offered (sinks.completion_words: they are the cluster's text) when it
    finishes within LIVE_SECONDS; otherwise, or on any error, none."""
    from rlark_tui.text.sinks import completion_words

    found: list[str] = []

    def work() -> None:
        try:
            found.extend(read())
        except Exception:  # completion must stay silent: a broken kubeconfig or cluster completes nothing
            found.clear()

    thread = threading.Thread(target=work, name="rlark-complete", daemon=True)
    thread.start()
    thread.join(LIVE_SECONDS)
    return [] if thread.is_alive() else completion_words(found)


def contexts(prefix: str, parsed_args: argparse.Namespace, **_) -> list[str]:
    from rlark_tui.cluster import kubeconfig as kc
    return live(lambda: sorted(kc.load(getattr(parsed_args, "kubeconfig", None)).contexts))


def jobs(prefix: str, parsed_args: argparse.Namespace, **_) -> list[str]:
    return live(lambda: _names(parsed_args, "jobs"))


def pods(prefix: str, parsed_args: argparse.Namespace, **_) -> list[str]:
    return live(lambda: _names(parsed_args, "pods"))


def _names(parsed_args: argparse.Namespace, what: str) -> list[str]:
    """Live names through the lean client (cluster/lean.py: no kubernetes import, one connection) when the
    context is a plain one and one list answers; the Pods of a named Job, and other contexts, through
    ClusterAccess."""
    from rlark_tui.cluster.kinds import JOBS, PODS
    from rlark_tui.cluster.lean import LeanClient
    from rlark_tui.model.objects import dig

    args = argparse.Namespace(**{**vars(parsed_args), "request_timeout": LIVE_SECONDS})
    job = getattr(parsed_args, "job", None) if what == "pods" else None
    if job:
        from rlark_tui.cluster.access import ClusterAccess
        full = ClusterAccess.from_args(args)
        try:
            return _pod_names(full.job_pods(job))
        finally:
            full.close()
    access: LeanClient | ClusterAccess | None = LeanClient.from_args(args)
    if access is None:
        from rlark_tui.cluster.access import ClusterAccess
        access = ClusterAccess.from_args(args)
    try:
        if what == "jobs":
            return sorted(name for item in access.list(JOBS, timeout=LIVE_SECONDS).items
                          if isinstance(name := dig(item, "metadata", "name"), str))
        return _pod_names(access.list(PODS, timeout=LIVE_SECONDS).items)
    finally:
        access.close()


def _pod_names(items: Iterable[dict]) -> list[str]:
    from rlark_tui.model.objects import Pod

    return sorted({Pod(item).pod_name or Pod(item).name for item in items if isinstance(item, dict)})
