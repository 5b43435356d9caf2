"""The `rlark` command line: global flags, one sub-command module per command group.

Each module in COMMANDS exposes `register(subparsers, parents)`; its handlers return an exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType

from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.local.startup import enter_kubernetes_lazily, import_native, pause_collector, resume_collector

# Each command module and the command names it registers: a command line names one, and only that module is
# imported (startup time); help, no command or an unknown one imports them all.
COMMANDS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "rlark_tui.commands.draft": ("draft",),
    "rlark_tui.commands.sandbox": ("sandbox",),
    "rlark_tui.commands.get": ("get",),
    "rlark_tui.commands.describe": ("describe",),
    "rlark_tui.commands.logs": ("logs",),
    "rlark_tui.commands.submit": ("submit",),
    "rlark_tui.commands.lifecycle": ("stop", "start", "restart", "delete"),
    "rlark_tui.commands.config": ("config",),
    "rlark_tui.commands.check": ("check",),
    "rlark_tui.commands.metrics": ("metrics",),
    "rlark_tui.commands.checkpoints": ("checkpoints",),
    "rlark_tui.commands.resume": ("resume",),
    "rlark_tui.commands.demo": ("demo",),
    "rlark_tui.commands.pod": ("exec", "cp"),
    "rlark_tui.commands.portforward": ("port-forward",),
    "rlark_tui.commands.diff": ("diff",),
    "rlark_tui.commands.clone": ("clone",),
    "rlark_tui.commands.edit": ("edit",),
    "rlark_tui.commands.version": ("version",),
    "rlark_tui.commands.completion": ("completion",),
    "rlark_tui.commands.storage": ("storage",),
    "rlark_tui.commands.sshkeys": ("sshkeys",),
    "rlark_tui.commands.watch": ("watch",),
    "rlark_tui.commands.wait": ("wait",),
    "rlark_tui.commands.status": ("status",),
    "rlark_tui.commands.top": ("top",),
    "rlark_tui.commands.stacks": ("stacks",),
    "rlark_tui.commands.diagnose": ("diagnose",),
    "rlark_tui.commands.bundle": ("bundle",),
})
VALUE_FLAGS = frozenset({"--kubeconfig", "--context", "--request-timeout", "--server-address", "--server-hostname",
                         "--client-cert", "--client-key", "--ca-cert", "--bundle"})


MULTI_CONTEXT = frozenset({"get", "watch", "status", "top"})
"""The commands that read several contexts at once (so does the TUI)."""


class _Contexts(argparse.Action):
    """--context NAME, repeatable: `context` is the first one given, `contexts` every one in order. A command's
    sub-parser parses into a namespace of its own, which then replaces the values given before the command: there
    the names go to `contexts_after`, which _join_contexts appends."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        names = [*(getattr(namespace, self.const, None) or []), str(values)]
        setattr(namespace, self.const, names)
        namespace.context = names[0]


def _join_contexts(args: argparse.Namespace) -> None:
    """The --context names given before the command and after it, in order."""
    after = getattr(args, "contexts_after", None)
    if after:
        args.contexts = [*(getattr(args, "contexts", None) or []), *after]
        args.context = args.contexts[0]
        del args.contexts_after


def _several(args: argparse.Namespace) -> bool:
    """Whether the flags name several contexts."""
    return len(set(getattr(args, "contexts", None) or ())) > 1 or bool(getattr(args, "all_contexts", False))


def _several_contexts(args: argparse.Namespace) -> None:
    """Only the TUI and MULTI_CONTEXT read several contexts: another command given two is a usage error."""
    command = getattr(args, "command", None)
    if _several(args) and command is not None and command not in MULTI_CONTEXT:
        raise UsageError(f"rlark {command} reads one context: give --context once "
                         f"({', '.join(sorted(MULTI_CONTEXT))} and the TUI take several, and --all-contexts)")


def _bundle_for_the_tui(args: argparse.Namespace) -> None:
    """Only the TUI opens a bundle: a command given --bundle (a global flag, so every command takes it) went on to
    the live cluster, and `rlark --bundle post-mortem.tar.gz delete JOB` deleted the live Job."""
    command = getattr(args, "command", None)
    if getattr(args, "bundle", None) and command is not None:
        raise UsageError(f"rlark {command} takes no --bundle: only the TUI opens a bundle (rlark --bundle FILE), "
                         "offline and read-only")


def _global_flags(suppress: bool) -> argparse.ArgumentParser:
    """Flags accepted before or after the command, as kubectl accepts them.

    On sub-parsers the defaults are suppressed so a flag given before the command survives.
    """
    parser = argparse.ArgumentParser(add_help=False)
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--kubeconfig", metavar="FILE", default=default,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--context", metavar="NAME", default=default, action=_Contexts,
                        const="contexts_after" if suppress else "contexts",
                        help="kubeconfig context of the RLark control plane; given again (the TUI, get, watch, "
                             "status, top), several control planes at once")
    parser.add_argument("--all-contexts", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="every context of the kubeconfig files (merged as kubectl merges them) at once: the "
                             "TUI, get, watch, status and top")
    parser.add_argument("--readonly", action="store_true",
                        default=argparse.SUPPRESS if suppress else False,
                        help="refuse every mutation (stop, start, delete, submit)")
    parser.add_argument("--no-color", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="no colour in the TUI or the output (also when NO_COLOR is set, no-color.org); states "
                             "read by their words and symbols")
    parser.add_argument("--bundle", metavar="FILE", default=default,
                        help="the TUI offline on a bundle `rlark bundle` wrote: what it captured, read-only")
    parser.add_argument("--no-mouse", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="the TUI leaves the mouse to the terminal, so text can be selected as usual")
    parser.add_argument("--theme", choices=("dark", "light"), default=default,  # local.config.THEMES, not loaded here
                        help="the TUI's theme (default: the config file's `theme:`, else dark)")
    parser.add_argument("--request-timeout", metavar="SECONDS", type=float, default=default,
                        help="give up on a single API request after this long (default 30)")
    server = parser.add_argument_group(
        "rlark-server (logs, events, Ray of the member clusters; these concern rlark-server only, unlike "
        "kubectl's flags of the same names)")
    server.add_argument("--server-address", metavar="URL", default=default,
                        help="rlark-server URL (https://HOST:8443; https://:PORT finds the host from its Lease)")
    server.add_argument("--server-hostname", metavar="NAME", default=default,
                        help="the name in rlark-server's certificate, when the address differs")
    server.add_argument("--client-cert", metavar="FILE", default=default,
                        help="client certificate for rlark-server (default: Secret rlark-admin-cert)")
    server.add_argument("--client-key", metavar="FILE", default=default, help="its private key")
    server.add_argument("--ca-cert", metavar="FILE", default=default, help="CA that signed rlark-server's certificate")
    server.add_argument("--server-insecure-skip-tls-verify", action="store_true",
                        default=argparse.SUPPRESS if suppress else False,
                        help="do not verify rlark-server's certificate (only when no CA can be had)")
    return parser


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or (with `command`) one that knows only the module registering that command."""
    parser = argparse.ArgumentParser(
        prog="rlark",
        description="Terminal console for RLark: create, watch and run-check RLinf jobs.",
        parents=[_global_flags(suppress=False)],
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    parents = [_global_flags(suppress=True)]
    for name, words in COMMANDS.items():
        if command is None or command in words:
            importlib.import_module(name).register(subparsers, parents)
    return parser


def _command_word(argv: Sequence[str]) -> str | None:
    """The command `argv` names when it is a known one and no help flag comes before it, else None."""
    known = {word for words in COMMANDS.values() for word in words}
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in ("-h", "--help", "--"):
            return None
        elif word.startswith("-"):
            skip = word in VALUE_FLAGS
        else:
            return word if word in known else None
    return None


def _completed_command() -> str | None:
    """The command a completing shell's line already names in full (then only its module is imported), else
    None: the word being typed may still become another command."""
    from rlark_tui.text.parse import ascii_int

    line, point = os.environ.get("COMP_LINE", ""), os.environ.get("COMP_POINT", "")
    cut = ascii_int(point)
    line = line[:cut] if cut is not None else line
    words = line.split()[1:]
    return _command_word(words if line.endswith(" ") else words[:-1])


def _tui_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """The global flags when `argv` holds nothing else (the TUI), else None. Opening the TUI this way does not
    import every command module (startup time, see bench/startup.py)."""
    parser = _global_flags(suppress=False)
    parser.exit_on_error = False
    try:
        args, rest = parser.parse_known_args(argv)
    except argparse.ArgumentError:
        return None
    return None if rest else args


class ExitAtOnce(int):
    """The exit code of a command that leaves nothing to clean up (the lean `rlark get`: no thread, no temporary
    file): `run` then ends the process as soon as the output is flushed, instead of tearing the interpreter down
    (freeing a 5,000-Job list and every module, a tenth of the command's time). Anything the command registered
    with atexit, or a thread still running, makes it a normal exit after all."""


def run() -> None:
    """The `rlark` console script and `python -m rlark_tui`: `main()`, then exit with its code."""
    import atexit
    import threading

    callbacks = getattr(atexit, "_ncallbacks", lambda: -1)()
    try:
        code = main()
    except KeyboardInterrupt:  # Ctrl-C before the command began (its modules' imports, the parser): as within it
        sys.exit(130)
    if isinstance(code, ExitAtOnce) and threading.active_count() == 1 \
            and getattr(atexit, "_ncallbacks", lambda: -2)() == callbacks:
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:  # None: the process was started without it (`2>&-`)
                    stream.flush()
        except (BrokenPipeError, OSError):
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


def _open_tui(args: argparse.Namespace):
    """The TUI's handler, imported while its first Jobs list is read (cluster.lean.FirstList), with the cycle
    collector paused until that list is on screen (local/startup.py; the app resumes it, RlarkApp.first_list_shown;
    so does the end of the TUI, whatever ended it)."""
    from rlark_tui.cluster.lean import FirstList

    pause_collector()
    # several contexts: each reconciler lists its own; a bundle lists nothing
    first = None if _several(args) or getattr(args, "bundle", None) else FirstList.start(args)
    try:
        from rlark_tui.tui.app import run_tui
    except BaseException:
        resume_collector()
        raise

    def handler(args: argparse.Namespace) -> int:
        try:
            return run_tui(args, first_list=first)
        finally:
            resume_collector()

    return handler


def main(argv: Sequence[str] | None = None) -> int:
    enter_kubernetes_lazily()
    from rlark_tui.local.terminal import escape_unencodable
    escape_unencodable()
    if "_ARGCOMPLETE" in os.environ:  # a completing shell runs us (see commands/completion.py)
        from rlark_tui.commands.completion import complete
        complete(build_parser(_completed_command()))
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = None
    command = _command_word(argv)
    args = None if command else _tui_args(argv)  # a command named is no TUI: its flags are parsed once, not twice
    if args is None:
        parser = build_parser(command)
        args = parser.parse_args(argv)
        _join_contexts(args)
    if getattr(args, "native", True):  # `rlark status`'s answer from its cache reads no JSON orjson is for
        import_native()
    handler = getattr(args, "handler", None)
    tui = handler is None and getattr(args, "command", None) is None
    if tui:
        handler = _open_tui(args)
    if handler is None:
        (parser or build_parser(_command_word(argv))).print_help(sys.stderr)
        return 2
    # Cluster text reaches the terminal cleaned of escapes; the TUI and `logs` (SGR colours, --raw) see to it.
    if tui:
        streams: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    else:
        from rlark_tui.local.terminal import clean_streams
        streams = clean_streams(cleaned=not getattr(args, "cleans_own_output", False))
        streams = _thread_bugs_told(streams)
    with streams:
        try:
            _check_names(args, parser, _command_word(argv))
            _several_contexts(args)
            _bundle_for_the_tui(args)
            code = handler(args)
            sys.stdout.flush()  # output still buffered that cannot be written is the command's one error line
            return code
        except RlarkError as exc:  # one line, whatever cluster text it quotes (a Job's status message)
            from rlark_tui.text.sinks import one_line
            print(f"error: {one_line(str(exc))}", file=sys.stderr)
            for note in getattr(exc, "__notes__", ()):  # a line of its own that the command added, one line each
                print(one_line(note), file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            # The reader went away (`rlark ... | head`): stop quietly like other Unix tools, and keep Python from
            # reporting the same broken pipe again when it flushes stdout at exit.
            from rlark_tui.local.terminal import silence_stdout
            silence_stdout()
            return 141
        except Exception as exc:  # a bug: one masked line and a 0600 report (local/crash.py), not a traceback
            from rlark_tui.local.crash import write_report
            print(write_report(exc), file=sys.stderr)
            return 1


@contextlib.contextmanager
def _thread_bugs_told(streams: contextlib.AbstractContextManager[None]) -> Iterator[None]:
    """`streams`, and meanwhile a command's thread ended by a bug (threading.excepthook) told as a crash is, by
    local/crash.py's Teller: one masked line on stderr naming the report, once per type and place (Python printed
    'Exception in thread', its traceback and the exception's message). crash.py is imported when a bug is told."""
    import threading

    tellers: list = []

    def hook(hooked: threading.ExceptHookArgs) -> None:
        from rlark_tui.local.crash import Teller, to_stderr

        if not tellers:
            tellers.append(Teller(to_stderr))
        tellers[0].thread_hook(hooked)

    before, threading.excepthook = threading.excepthook, hook
    try:
        with streams:
            yield
    finally:
        if threading.excepthook is hook:
            threading.excepthook = before


NAME_ARGUMENTS = ("job", "name", "names", "jobs")
MAX_NAME = 253


def _check_names(args: argparse.Namespace, parser: argparse.ArgumentParser | None, command: str | None) -> None:
    """Object names given as positional arguments (JOB, NAME) are path segments of API URLs: an empty name, `.`, `..`, a `/`
    or `%` (which would name another path) or a control character is refused in one line (exit 2) before any
    request."""
    for attribute in _positionals(parser, command):
        value = getattr(args, attribute, None)
        for name in value if isinstance(value, list) else [value] if isinstance(value, str) else []:
            if not name or name in (".", "..") or len(name) > MAX_NAME or any(c in "/%" or not c.isprintable()
                                                                           for c in name):
                shown = repr(name) if name.isprintable() else ascii(name)
                raise UsageError(f"{shown} is not a name: names are 1 to {MAX_NAME} characters, not `.` or `..`, "
                                 "without `/`, `%` or control characters")


def _positionals(parser: argparse.ArgumentParser | None, command: str | None) -> list[str]:
    """The positional arguments among NAME_ARGUMENTS of top-level `command`."""
    if parser is None or command is None:
        return []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return [sub.dest for sub in action.choices[command]._actions
                    if not sub.option_strings and sub.dest in NAME_ARGUMENTS]
    return []
