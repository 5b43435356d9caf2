"""Shell habits: completion driven through real bash and the real `rlark` (argcomplete's protocol), `rlark version`
and `rlark config --example`, against the shared sandbox."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlark_tui.local.config import load_config
from tests.clirun import cli_runner

BIN = Path(sys.executable).parent
COMPLETE = """eval "$(rlark completion bash)"
COMP_LINE=%s; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$COMP_LINE"
[[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_python_argcomplete rlark "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%%s\\n' "${COMPREPLY[@]}"
"""


def complete(line: str, env_dir: Path) -> tuple[list[str], str, float]:
    """What bash offers for `line` (Tab at its end): the candidates, the shell's stderr, and the seconds taken."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", RLARK_CONFIG=str(env_dir / "config.yaml"),
               RLARK_STATE_DIR=str(env_dir / "state"))
    env.pop("KUBECONFIG", None)
    started = time.monotonic()
    done = subprocess.run(["bash", "--norc", "-c", COMPLETE % shlex.quote(line)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return [word.strip() for word in done.stdout.splitlines() if word.strip()], done.stderr, time.monotonic() - started


def test_bash_completes_commands_flags_contexts_jobs_and_pods_live(sandbox, tmp_path):
    kc = f"rlark --kubeconfig {sandbox.kubeconfig} "
    assert complete("rlark ver", tmp_path)[0] == ["version"]
    assert complete("rlark logs --ro", tmp_path)[0] == ["--role"]
    assert complete(kc + "--context rlark-sand", tmp_path)[0] == ["rlark-sandbox"]
    assert "demo-ppo" in complete(kc + "describe job ", tmp_path)[0]
    assert complete(kc + "check demo-p", tmp_path)[0] == ["demo-ppo"]
    pods = complete(kc + "logs demo-ppo --pod ", tmp_path)[0]
    assert "demo-ppo-actor-0" in pods and all(pod.startswith("demo-ppo-") for pod in pods)


def test_live_names_give_up_after_a_second_and_errors_complete_nothing_silently(sandbox, faults, tmp_path):
    faults.delay(20, verb="list", resource="jobs")
    words, err, seconds = complete(f"rlark --kubeconfig {sandbox.kubeconfig} describe job ", tmp_path)
    assert words == [] and err == ""
    assert seconds < 12, "completion waited for the slow answer"  # 1 s cap plus bash and Python start-up
    broken = tmp_path / "broken.yaml"
    broken.write_text("clusters: [\n")
    assert complete(f"rlark --kubeconfig {broken} describe job ", tmp_path)[:2] == ([], "")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_shell_code(shell, env, capsys):
    from rlark_tui.cli import main
    assert main(["completion", shell]) == 0
    code = capsys.readouterr().out
    assert "rlark" in code and "_ARGCOMPLETE" in code
    if shell == "bash":
        assert subprocess.run(["bash", "-n"], input=code, text=True).returncode == 0


def test_version_names_client_served_apis_and_gateway(sandbox, env, capsys):
    run = cli_runner(sandbox.kubeconfig, capsys)
    result = run("version")
    assert result.code == 0, result.err
    lines = dict(line.split(":", 1) for line in result.out.splitlines())
    assert lines["Client"].strip().startswith("rlark 0.1.0 (python ")
    assert lines["RLark API"].strip() == "rlinf.io/v1alpha1"
    assert lines["Kubernetes API"].strip().startswith("v1.")
    assert lines["Gateway"].strip().endswith("reachable (2 cluster(s) listed)")


def test_version_prints_the_client_then_one_line_when_the_server_is_down(sandbox, faults, env, capsys):
    faults.outage(30, mode="503")
    result = cli_runner(sandbox.kubeconfig, capsys)("--request-timeout", "5", "version")
    assert result.code == 1
    assert result.out.startswith("Client:   rlark 0.1.0")
    assert len(result.err.strip().splitlines()) == 1 and result.err.startswith("error: ")


def test_config_example_is_a_commented_file_that_loads(env, capsys, tmp_path):
    from rlark_tui.cli import main
    assert main(["config", "--example"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# Save as ") and text.count("#") >= 5
    path = tmp_path / "example.yaml"
    path.write_text(text)
    config = load_config(path)
    assert config.gateway and config.clusters and config.ray_token and config.ray_urls


def test_live_names_a_shell_is_offered_are_printable_whatever_the_cluster_answers(sandbox, faults):
    """A Job or Pod name is the cluster's text, and argcomplete escapes the shell's special characters but no
    control: a name holding ESC ']2;…' BEL reached the terminal raw when bash listed the candidates, and one holding
    '\\v' (argcomplete's separator) was offered as two candidates, the second forged. Such a name is not offered
    (it names nothing one can type); an item of the wrong shape no longer makes the whole list nothing."""
    from rlark_tui.cli import build_parser
    from rlark_tui.commands import completion

    bad = "evil\x1b]2;pwned\x07\x0bforged\n$(touch x)\u202e"
    faults.extra_items([{"metadata": {"name": bad}, "spec": {}}, {"metadata": 5},
                        {"metadata": {"name": "cr-x"}, "spec": {"podName": bad}}])
    args = build_parser("describe").parse_args(["--kubeconfig", str(sandbox.kubeconfig), "describe", "job", "x"])
    jobs = completion.jobs("", args)
    for names in (jobs, completion.pods("", args)):
        assert names and all(name.isprintable() for name in names), names
        assert not any("forged" in name or "evil" in name for name in names)
    assert "demo-ppo" in jobs
