"""The lean client path of `rlark get` (cluster/lean.py): over the sandbox's real HTTPS it prints byte for byte
what the client path (ClusterAccess, the `kubernetes` ApiClient) prints, for every kind and `-o` form, errors
included; it imports no `kubernetes`; contexts it cannot take fall back to the client; kubectl, reading the same
objects, finds the same names."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from rlark_tui.cluster import lean
from rlark_tui.cluster.kinds import JOBS
from tests.clirun import cli_runner
from tests.cluster.seeding import ROLES, job_manifest, seed_running_job

# Every kind, every -o form, -A, -n, -l, named objects (found, missing, several), an empty answer, usage errors.
COMMANDS = [
    ("get", "jobs"), ("get", "jobs", "-A"), ("get", "rljob", "demo-ppo", "-o", "yaml"),
    ("get", "jobs", "-o", "json"), ("get", "jobs", "-o", "yaml"), ("get", "jobs", "-o", "name"),
    ("get", "jobs", "lean-a", "nope", "demo-ppo"), ("get", "jobs", "nope"), ("get", "jobs", "-l", "nobody=here"),
    ("get", "tasks", "-A"), ("get", "tasks", "-A", "-o", "wide"), ("get", "tasks", "-n", "rlark-edge-b"),
    ("get", "tasks", "-A", "-l", "rlinf.io/job=lean-a", "-o", "name"),
    ("get", "pods", "-A"), ("get", "pods", "-A", "-l", "rlark.io/task-name=lean-a-env", "-o", "json"),
    ("get", "nodes", "-A"), ("get", "nodes", "-A", "-o", "wide"), ("get", "nodes"),
    ("get", "nodes", "-A", "-l", "rlark.io/node-category=cloud", "-o", "yaml"),
    ("get", "domains"), ("get", "domains", "-o", "wide"), ("get", "workflows", "-o", "wide"),
    ("get", "widgets"), ("get", "jobs", "--request-timeout", "0"),
]


@pytest.fixture
def frozen_clock(monkeypatch):
    """AGE cells computed at one fixed instant, so two runs a second apart print the same table."""
    from rlark_tui.cluster import output

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    monkeypatch.setattr(output, "datetime", Frozen)


@pytest.fixture
def client_path(monkeypatch):
    """Make `rlark get` take the client path (as for a context the lean path does not handle)."""
    def use_client() -> None:
        monkeypatch.setattr(lean.LeanClient, "open", classmethod(lambda cls, *args, **kwargs: None))
    return use_client


@pytest.fixture
def lean_calls(monkeypatch):
    """How many requests went through the lean client."""
    calls = []
    real = lean.LeanClient.send

    def counted(self, *args, **kwargs):
        calls.append(args[0])
        return real(self, *args, **kwargs)
    monkeypatch.setattr(lean.LeanClient, "send", counted)
    return calls


def test_lean_path_prints_exactly_what_the_client_path_prints(sb, rl, frozen_clock, client_path, lean_calls):
    seed_running_job(sb, "lean-a", ROLES)
    leaned = [rl(*argv) for argv in COMMANDS]
    assert len(lean_calls) >= len(COMMANDS) - 2  # all but the two usage errors read through the lean client
    client_path()
    for argv, got in zip(COMMANDS, leaned):
        expected = rl(*argv)
        assert (got.code, got.out, got.err) == (expected.code, expected.out, expected.err), argv
    assert any("lean-a" in r.out for r in leaned) and "Traceback" not in "".join(r.err for r in leaned)


def test_lean_path_errors_are_the_client_paths_one_line(sb, rl, env, client_path, tmp_path):
    """A closed port, a CA that did not sign the server's certificate, a 401, and a server too slow for
    --request-timeout: the same line and exit code either way."""
    document = yaml.safe_load(Path(sb.kubeconfig).read_text())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    cluster = document["clusters"][0]["cluster"]
    variants = {"refused": {"server": f"https://127.0.0.1:{closed_port}"},
                "wrong CA": {"certificate-authority-data": _other_ca()}, "bad token": {}}
    runs = {}
    for name, change in variants.items():
        spoiled = json.loads(json.dumps(document))
        spoiled["clusters"][0]["cluster"] = {**cluster, **change}
        if name == "bad token":
            spoiled["users"][0]["user"] = {"token": "not-the-token"}
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spoiled))
        runs[name] = cli_runner(path, _capsys(rl))
    leaned = {name: run("get", "jobs") for name, run in runs.items()}
    with sb.faults.cleared() as faults:
        faults.delay(2.0)
        leaned["slow"] = rl("get", "jobs", "--request-timeout", "0.3")
        client_path()
        slow = rl("get", "jobs", "--request-timeout", "0.3")
    for name, run in runs.items():
        expected = run("get", "jobs")
        got = leaned[name]
        assert (got.code, got.out, got.err) == (expected.code, expected.out, expected.err), name
        assert got.code == 1 and got.err.count("\n") == 1 and got.err.startswith("error: "), (name, got.err)
    assert (leaned["slow"].code, leaned["slow"].err) == (slow.code, slow.err)
    assert slow.code == 1 and slow.err.startswith("error: timed out after 0.3s waiting for the control plane at ")
    assert "connection refused" in leaned["refused"].err and "TLS error" in leaned["wrong CA"].err
    assert "unauthorized (401)" in leaned["bad token"].err


@pytest.mark.parametrize("host", ["a..b", ".rlark", "x" * 64, "\u00fc" + "x" * 70])
def test_a_server_name_no_resolver_takes_is_one_line_on_both_paths(env, tmp_path, capsys, host):
    """Issue 33, a twenty-fourth round (generated kubeconfigs, 1 of 300 crashed; a typo does it): a server host with
    an empty label or one of more than 63 characters raised UnicodeError out of the resolver's IDNA encoding, and
    `rlark get jobs` (the lean path) ended in a crash report, where the client path said one line."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"https://{host}:6443"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}, allow_unicode=True))
    kubeconfig.chmod(0o600)
    run = cli_runner(kubeconfig, capsys)
    said = {argv: run(*argv) for argv in (("get", "jobs"), ("describe", "job", "x"))}
    for got in said.values():
        assert got.code == 1 and got.out == "" and got.err == (
            f"error: cannot resolve the host of the control plane at https://{host}:6443: not a host name (a label "
            "is empty or longer than 63 characters)\n"), got.err


def _capsys(rl):
    """The capsys the `rl` runner reads (its closure), for more runners on other kubeconfigs."""
    return next(cell.cell_contents for cell in rl.__closure__ if hasattr(cell.cell_contents, "readouterr"))


def _other_ca() -> str:
    """A CA certificate (base64 PEM) that signed nothing the sandbox serves."""
    import base64
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "not-the-sandbox-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def test_a_context_with_an_exec_plugin_goes_through_the_client(sb, rl, env, tmp_path):
    document = yaml.safe_load(Path(sb.kubeconfig).read_text())
    token = document["users"][0]["user"].pop("token")
    plugin = tmp_path / "plugin.py"
    plugin.write_text("import json\nprint(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', "
                      f"'kind': 'ExecCredential', 'status': {{'token': {token!r}}}}}))\n")
    document["users"][0]["user"]["exec"] = {"apiVersion": "client.authentication.k8s.io/v1",
                                            "command": sys.executable, "args": [str(plugin)],
                                            "interactiveMode": "Never"}
    path = tmp_path / "exec.yaml"
    path.write_text(yaml.safe_dump(document))
    assert lean.LeanClient.open(str(path)) is None
    assert lean.LeanClient.open(str(sb.kubeconfig)) is not None
    via_plugin = cli_runner(path, _capsys(rl))("get", "jobs", "-o", "name")
    assert via_plugin.code == 0 and via_plugin.out == rl("get", "jobs", "-o", "name").out
    assert "job.rlinf.io/demo-ppo\n" in via_plugin.out


def test_lean_get_imports_neither_kubernetes_nor_urllib3(sb, env):
    """(`kubernetes` itself is in sys.modules as a bare package entry, local/startup.py; none of its
    modules is. The read goes over cluster/http.py's KeptConnection, on http.client.)"""
    code = ("import sys\nfrom rlark_tui.cli import main\n"
            f"status = main(['--kubeconfig', {str(sb.kubeconfig)!r}, 'get', 'jobs', '-A'])\n"
            "heavy = sorted(m for m in sys.modules if m.startswith(('kubernetes.', 'urllib3', 'textual')))\n"
            "print(status, heavy, file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ), cwd=Path(__file__).resolve().parents[2])
    assert result.stderr.strip() == "0 []", result.stderr
    assert "demo-ppo" in result.stdout


def test_the_process_ends_at_once_with_all_its_output_and_exit_code(sb, rl, env, frozen_clock):
    """`python -m rlark_tui get` on the lean path skips interpreter teardown (cli.ExitAtOnce): everything
    printed still arrives, with the exit code (a reader that leaves early: test_get_describe.py)."""
    command = [sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sb.kubeconfig)]
    repo = Path(__file__).resolve().parents[2]
    listed = subprocess.run([*command, "get", "jobs", "-o", "yaml"], capture_output=True, text=True, timeout=60,
                            cwd=repo)
    assert (listed.returncode, listed.stdout, listed.stderr) == (
        0, rl("get", "jobs", "-o", "yaml").out, "")
    missing = subprocess.run([*command, "get", "jobs", "nope"], capture_output=True, text=True, timeout=60,
                             cwd=repo)
    assert (missing.returncode, missing.stdout, missing.stderr) == (1, "", 'error: jobs "nope" not found\n')


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_reads_the_same_objects(sb, rl, env, tmp_path):
    """kubectl and the lean path over the same sandbox: the same `-o name` lines, the same objects in `-o json`
    (secrets aside: rlark masks them), and the same rows (namespace, name) in the same order."""
    seed_running_job(sb, "lean-k", ROLES)
    kubectl = ["kubectl", "--kubeconfig", str(sb.kubeconfig), "--cache-dir", str(tmp_path / "kube-cache")]

    def run_kubectl(*argv: str) -> str:
        result = subprocess.run([*kubectl, *argv], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout

    for ours, theirs in ((("jobs",), ("rljob",)), (("tasks", "-A"), ("tasks.rlinf.io", "-A")),
                         (("nodes", "-A"), ("nodes.rlinf.io", "-A")), (("pods", "-A"), ("pods.rlinf.io", "-A"))):
        assert rl("get", *ours, "-o", "name").out == run_kubectl("get", *theirs, "-o", "name")
        mine = json.loads(rl("get", *ours, "-o", "json").out)["items"]
        kubes = json.loads(run_kubectl("get", *theirs, "-o", "json"))["items"]
        identity = [(i["metadata"].get("namespace"), i["metadata"]["name"], i["metadata"]["uid"],
                     i["metadata"]["resourceVersion"]) for i in mine]
        assert identity == [(i["metadata"].get("namespace"), i["metadata"]["name"], i["metadata"]["uid"],
                             i["metadata"]["resourceVersion"]) for i in kubes]
        if ours[0] == "pods":
            continue  # rlark's NAME column is the data-plane pod's name; kubectl's is the Pod CR's
        table = rl("get", *ours).out.splitlines()
        kube_table = run_kubectl("get", *theirs).splitlines()
        assert [line.split()[:2 if "-A" in ours else 1] for line in table[1:]] == \
               [line.split()[:2 if "-A" in ours else 1] for line in kube_table[1:]]


def _tui_args(*argv: str):
    from rlark_tui.cli import _tui_args as parse
    return parse(list(argv))


@contextlib.contextmanager
def _jobs_watch(args, first):
    """ClusterAccess from the TUI's `args` holding its first list `first`, and that access's Jobs list_watch."""
    from rlark_tui.cluster.access import ClusterAccess

    access = ClusterAccess.from_args(args)
    access.first_list = first
    stop = threading.Event()
    events = access.list_watch(JOBS, stop)
    try:
        yield access, events
    finally:
        stop.set()
        events.close()
        access.close()


def test_the_tuis_first_list_is_read_while_it_starts_and_its_watch_goes_on_from_there(sb, env):
    """The first list of all Jobs is the one read at start (FirstList), once; a Job created after that read
    and before the watch opens still arrives, as ADDED: the watch starts from that list's resourceVersion."""
    args = _tui_args("--kubeconfig", str(sb.kubeconfig))
    first = lean.FirstList.start(args)
    assert first.answered(10)
    sb.store.create("jobs", job_manifest("after-first-list", [ROLES[1]]))
    try:
        with _jobs_watch(args, first) as (_access, events):
            relist = next(events)
            names = {item["metadata"]["name"] for item in relist.items}
            assert relist.type == "RELIST" and "demo-ppo" in names and "after-first-list" not in names
            added = next(event for event in events if event.type == "ADDED")
            assert added.obj["metadata"]["name"] == "after-first-list"
            assert first.take(JOBS, None, None, None, 1) is None  # taken once
    finally:
        sb.store.delete("jobs", "after-first-list")


def test_a_first_list_that_failed_is_the_reconcilers_error_and_other_contexts_list_as_ever(sb, env, tmp_path):
    """A refused connection at start reaches the watch as the ERROR its own list would give, in the same words;
    a context the lean path does not take (an exec plugin) has no first list, and the client lists."""
    document = yaml.safe_load(Path(sb.kubeconfig).read_text())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    document["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{closed_port}"
    refused = tmp_path / "refused.yaml"
    refused.write_text(yaml.safe_dump(document))
    args = _tui_args("--kubeconfig", str(refused))
    with _jobs_watch(args, lean.FirstList.start(args)) as (access, events):
        error = next(events)
        assert error.type == "ERROR" and "connection refused" in str(error.error)
        with pytest.raises(type(error.error)) as own:
            access.list(JOBS)
        assert str(own.value) == str(error.error)

    plugin = yaml.safe_load(Path(sb.kubeconfig).read_text())
    plugin["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                           "command": "true"}}
    path = tmp_path / "plugin.yaml"
    path.write_text(yaml.safe_dump(plugin))
    first = lean.FirstList.start(_tui_args("--kubeconfig", str(path)))
    assert first.answered(10) and first.take(JOBS, None, None, None, 1) is None
