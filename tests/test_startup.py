"""Issue 32 item 6: rlark's start-up measures live in one place (local/startup.py) and do what they claim; the
A/B gain of each is in the README's performance section (bench/startup.py, bench/cli_get.py).

- Nothing but local/startup.py touches the garbage collector or writes `sys.modules`.
- Importing `rlark_tui.cluster` has no side effect on `kubernetes`; `rlark`'s entry point enters the package
  without its `__init__`, so a full-client read never loads the kubeconfig loader's google-auth.
- `rlark get` reads and prints its list with no collector pass, and leaves the collector on.
- Large blocks freed after a large answer go back to the system (the TUI's list_rss_mb, bench/startup.py).
"""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
from pathlib import Path

import pytest

import rlark_tui
from rlark_tui.cli import main
from rlark_tui.commands import get as get_command
from tests.sources import parsed

PACKAGE = Path(rlark_tui.__file__).parent
ONE_PLACE = PACKAGE / "local" / "startup.py"


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def test_only_local_startup_touches_the_collector_or_sys_modules():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == ONE_PLACE:
            continue
        where = path.relative_to(PACKAGE)
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Import) and any(alias.name == "gc" for alias in node.names):
                found.append(f"{where}:{node.lineno} imports gc")
            elif isinstance(node, ast.ImportFrom) and node.module == "gc":
                found.append(f"{where}:{node.lineno} imports from gc")
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
                targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "sys.modules":
                        found.append(f"{where}:{node.lineno} writes sys.modules")
    assert found == []


def test_importing_the_cluster_package_leaves_kubernetes_alone():
    assert _fresh("import sys, rlark_tui.cluster\nprint('kubernetes' in sys.modules)") == "False"
    # a program that imports rlark_tui.cluster gets the kubernetes package as its authors made it
    assert _fresh("import rlark_tui.cluster, kubernetes\nprint(hasattr(kubernetes, 'config'))") == "True"


def test_the_entry_point_enters_kubernetes_without_the_kubeconfig_loaders_imports():
    code = ("import contextlib, io, sys\nfrom rlark_tui.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['version'])\n"
            "from kubernetes import client, watch\n"
            "print(sorted(m for m in ('kubernetes.config', 'google.auth', 'requests_oauthlib') if m in sys.modules))")
    assert _fresh(code) == "[]"


def test_rlark_get_reads_and_prints_with_no_collector_pass_and_leaves_it_on(sandbox, env, capsys):
    """With the collector's threshold at 1, any pass while `get` reads, builds and prints its rows is caught."""
    show = get_command.show.__code__
    passes: list[int] = []

    def seen(phase: str, info: dict) -> None:
        frame = sys._getframe(1)
        while frame is not None and phase == "start":
            if frame.f_code is show:
                passes.append(info["generation"])
                return
            frame = frame.f_back

    threshold = gc.get_threshold()
    gc.callbacks.append(seen)
    gc.set_threshold(1)
    try:
        code = main(["--kubeconfig", str(sandbox.kubeconfig), "get", "jobs", "-A"])
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(seen)
    assert int(code) == 0 and "demo-ppo" in capsys.readouterr().out
    assert passes == []
    assert gc.isenabled()


def test_ctrl_c_while_the_command_is_still_being_imported_ends_quietly_with_130(monkeypatch, capsys):
    """Issue 33, a seventeenth round (Ctrl-C at any moment): a Ctrl-C in rlark's first tenth of a second, while
    main built its parser (the command's modules imported: ssl, the lean client), ended in a KeyboardInterrupt
    traceback of 20 to 50 lines; within the command it was exit 130 and no line. Now it is that, whenever it comes."""
    from rlark_tui import cli

    def interrupted(command):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    monkeypatch.setattr(sys, "argv", ["rlark", "get", "jobs"])
    with pytest.raises(SystemExit) as ended:
        cli.run()
    assert ended.value.code == 130 and capsys.readouterr() == ("", "")


def test_the_entry_point_imports_orjson_with_ctrl_c_held():
    """Issue 33, a seventeenth round (Ctrl-C at any moment): orjson's module init imports Python modules without
    checking they came, so a Ctrl-C in those milliseconds of rlark's start (status --tmux, 5 of 6 tries at 85 ms)
    was a segmentation fault (exit -11, a core dump), not 130. rlark's entry point imports it with SIGINT blocked."""
    code = ("import signal, sys\n"
            "held = []\n"
            "class Watch:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'orjson':\n"
            "            held.append(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))\n"
            "sys.meta_path.insert(0, Watch())\n"
            "import contextlib, io\nfrom rlark_tui.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['version'])\n"
            "print(*held, signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))")
    assert _fresh(code).split() == ["True", "False"]


@pytest.mark.parametrize("cached", [True, False], ids=["from-cache", "refresher-started"])
def test_rlark_status_answers_from_its_cache_without_orjson(tmp_path, cached):
    """bench alerts' status_tmux_s_p95 was 0.13 s against 0.08 s before issue 33: tmux runs `rlark status --tmux`
    every few seconds, and each run imported orjson (with dataclasses, 14 ms) to read a cache of a few KiB. The
    answering path reads it with the standard library, as its docstring says; `--refresh` imports orjson as every
    other command does. Nor does it load OpenSSL (hashlib; secrets, for the lock's temporary name, through hmac)
    to name the cache or start a refresher, import datetime to read two times, or compile the cleaning patterns
    for a printable line (still 15 ms of CPU over acc6d58 after that); and the process ends without interpreter
    teardown once its line is out (cli.ExitAtOnce)."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    code = ("import contextlib, io, os, sys, time\n"
            f"os.environ.update(RLARK_STATE_DIR={str(state)!r}, KUBECONFIG={str(tmp_path / 'kubeconfig')!r})\n"
            "from rlark_tui.commands.status import cache_files\n"
            "from rlark_tui.cli import main\n"
            "cache = os.path.join(os.environ['RLARK_STATE_DIR'], cache_files(None)[0])\n"
            + ("open(cache, 'w').write('{\"time\": %f, \"running\": 3, \"failed\": 1}' % time.time())\n"
               "os.chmod(cache, 0o600)\n" if cached else "") +
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n    code = main(['status', '--tmux'])\n"
            "from rlark_tui.text.sanitize import compiled\n"
            "print(out.getvalue().strip(), type(code).__name__, code, *(name in sys.modules for name in ('orjson', 'dataclasses', '_hashlib', "
            "'datetime', 'secrets', 'rlark_tui.text.sinks')), compiled.cache_info().currsize)")
    assert _fresh(code) == ("rlark ▶3 ✗1" if cached else "rlark ?") + " ExitAtOnce 0" + " False" * 6 + " 0"


def test_a_plain_get_compiles_no_pattern_of_the_text_modules_and_loads_no_masker(sandbox, env):
    """Issue 33/34, "python -m bench is no worse" (rlark_get_jobs_s, 5,000 Jobs: 947 million instructions against
    899 million before issue 33, valgrind): the sinks' and sanitize's patterns of wide characters were compiled at
    import (39 million), and the Job view's module loaded the secret masker for the TUI's progress note. A plain
    get prints printable ASCII lines: of the text modules' patterns (sanitize.compiled, at first need) it compiles
    only the one `clean` searches its lines with for a control character, and it never loads text.redact."""
    code = ("import contextlib, io, sys\nfrom rlark_tui.cli import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    code = main(['--kubeconfig', {str(sandbox.kubeconfig)!r}, 'get', 'jobs', '-A'])\n"
            "from rlark_tui.text.sanitize import compiled\n"
            "print('demo-ppo' in out.getvalue(), code, 'rlark_tui.text.redact' in sys.modules, "
            "compiled.cache_info().currsize)")
    assert _fresh(code) == "True 0 False 1"
    at_import = [f"{path.name}:{node.lineno}" for path in (PACKAGE / "text" / "sinks.py", PACKAGE / "text" / "sanitize.py")
                 for node in parsed(path).body if isinstance(node, ast.Assign) and "re.compile(" in ast.unparse(node)]
    assert at_import == []


def test_blocks_freed_after_a_large_answer_go_back_to_the_system():
    """Issue 33/34, "python -m bench is no worse" (list_rss_mb, 5,000 Jobs / 50,000 Pods: 282 MB against 272 MB
    before issue 33): once a 30 MiB answer was freed, glibc kept every later block below 30 MiB in its heap, and
    24 MiB of them freed stayed in the RSS (23 MiB here without give_back_large_blocks, which the TUI calls once
    its first list is painted)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's threshold: other C libraries give large blocks back as they do")
    code = ("from rlark_tui.local.startup import give_back_large_blocks\n"
            "def rss():\n"
            "    return int(next(line for line in open('/proc/self/status') if line.startswith('VmRSS')).split()[1])\n"
            "give_back_large_blocks()\n"
            "answer = b'x' * (30 << 20)\n"
            "del answer\n"
            "before = rss()\n"
            "blocks = [b'x' * (1 << 20) for _ in range(24)]\n"
            "del blocks\n"
            "print(rss() - before)")
    assert int(_fresh(code)) < 4 * 1024  # KiB
