"""Bad input: hypothesis fuzzing of everything a user can type or hand to rlark, in-process through the CLI's
`main(argv)` (or the wizard's import and field parsers), against the Ray-free reliability sandbox where a server
is needed.

Property everywhere: an exit code in {0, 1, 2, 3}, stderr made of short message lines, never a traceback and
never an exception out of `main` (argparse's own usage exit, SystemExit 2, counts as exit code 2).

tests/test_draft_cli.py already fuzzes `draft render` with mutated fields, random bytes and YAML-like noise;
this file adds JSON drafts, env names, SSH keys, node selectors, the wizard's import/export and typed fields,
`submit -f --dry-run`, `/` filter regexes, `get -l` selectors, `logs --since` durations, numeric flags
(timeouts, waits), kubeconfig and config files, object names, `sandbox --seed` and whole command lines.
Case counts per target are in CASES (hypothesis may stop a target early when it has tried every distinct
input); RLARK_FUZZ_SCALE multiplies them.
"""
from __future__ import annotations

import contextlib
import copy
import io
import ipaddress
import json
import os
import re
import socket
import string
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlark_tui.cli import main
from rlark_tui.errors import RlarkError
from rlark_tui.jobspec import wizard_fields as wf
from rlark_tui.jobspec.draft import load_draft
from rlark_tui.local.draft_files import export_draft, import_draft
from rlark_tui.widgets.filter_bar import make_matcher
from tests.mutation import mutate

DATA = Path(__file__).parent.parent / "model" / "data"
DRAFT = yaml.safe_load((DATA / "draft-rl.yaml").read_text())
NODES = DATA / "nodes.yaml"
EXIT_CODES = {0, 1, 2, 3}
MAX_LINE = 2000
MESSAGE_LINE = re.compile(r"^(error|warning|usage:|rlark|-- |No resources found|record (saved|written): |\s)")

CASES = {"draft-json": 40, "env-names": 60, "ssh-keys": 60, "node-selectors": 60, "wizard-import-bytes": 150,
         "wizard-import-yaml": 150, "submit-dry-run-draft": 30, "submit-dry-run-manifest": 30,
         "submit-dry-run-bytes": 30, "filter-regex": 400, "filter-regex-text": 300, "get-selector": 60,
         "logs-since": 150, "request-timeout": 60, "kubeconfig": 80, "config-file": 80, "object-names": 80,
         "wizard-fields": 300, "sandbox-seed": 200, "any-argv": 200}
SCALE = int(os.environ.get("RLARK_FUZZ_SCALE", "1"))
"""RLARK_FUZZ_SCALE=10 runs ten times the cases of every target (a deeper run by hand; CI keeps 1)."""


def fuzz(target: str):
    return settings(max_examples=CASES[target] * SCALE, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def assert_message(code: int, out: str, err: str) -> None:
    """Exit code in {0,1,2,3}; stderr only short message lines; no traceback anywhere."""
    assert code in EXIT_CODES, (code, err)
    assert "Traceback" not in out and "Traceback" not in err, err
    if err.startswith("usage:"):
        return  # argparse's usage, or a command's help when an action is missing
    for line in filter(None, err.split("\n")):
        assert len(line) <= MAX_LINE and MESSAGE_LINE.match(line), line[:300]
    if code == 2:
        assert err.strip(), "a usage error says why"


def render(mapping_or_text, *extra: str) -> tuple[int, str, str]:
    text = mapping_or_text if isinstance(mapping_or_text, (str, bytes)) else \
        yaml.safe_dump(mapping_or_text, allow_unicode=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "draft.yaml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        return run("draft", "render", str(path), "--nodes", str(NODES), *extra)


def with_role_field(field: str, value) -> dict:
    draft = copy.deepcopy(DRAFT)
    draft["roles"][0][field] = value
    return draft


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=30), st.sampled_from(["", " ", "\x00", "a" * 300, "10**400", "-1", "Gi"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=10), inner, max_size=3), max_leaves=5)
label_text = st.one_of(st.text(max_size=70),
                       st.text(alphabet=string.ascii_letters + string.digits + "-_./=,!()*", max_size=70),
                       st.sampled_from(["kubernetes.io/hostname", "a/b/c", "-x", "x" * 64, "rlark.io/", "/x"]))


# --- draft files: JSON, env names, SSH keys, node selectors -------------------------------------------------

@fuzz("draft-json")
@given(st.dictionaries(st.sampled_from(["name", "type", "header", "domain", "roles", "record", "sshPublicKey",
                                        "runScript", "displayName", "tensorboardDir"]), values, max_size=4))
def test_json_drafts(changes):
    draft = {**DRAFT, **changes}
    assert_message(*render(json.dumps(draft, ensure_ascii=bool(len(draft) % 2))))


@fuzz("env-names")
@given(st.dictionaries(st.one_of(st.text(max_size=40), st.sampled_from(["HF_TOKEN", "1X", "A=B", "PATH", "a-b",
                                                                         "RLARK_TASK_ROLE", "MY_SECRET"])),
                       st.one_of(st.text(max_size=60), st.integers(), st.none(), st.booleans()), max_size=4))
def test_env_names(env):
    code, out, err = render(with_role_field("env", env))
    assert_message(code, out, err)
    for value in env.values():
        if isinstance(value, str) and len(value) > 12 and value.startswith("hf_"):
            assert value not in err


ssh_keys = st.one_of(
    st.text(max_size=200),
    st.builds(lambda kind, body, comment, sep: f"{kind}{sep}{body}{sep}{comment}",
              st.sampled_from(["ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ssh-dss", "sk-ssh", ""]),
              st.text(alphabet=string.ascii_letters + string.digits + "+/=", max_size=120),
              st.text(max_size=20), st.sampled_from([" ", "\t", "\n", "  "])),
    st.sampled_from(["-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
                     "ssh-ed25519 AAAA\nssh-ed25519 BBBB", "\x00", " " * 5000]))


@fuzz("ssh-keys")
@given(ssh_keys)
def test_ssh_public_keys(key):
    assert_message(*render({**DRAFT, "sshPublicKey": key}))


@fuzz("node-selectors")
@given(st.one_of(st.dictionaries(label_text, st.one_of(label_text, scalars), max_size=3), values),
       st.integers(min_value=0, max_value=2))
def test_node_selectors(selector, role):
    draft = copy.deepcopy(DRAFT)
    draft["roles"][role]["selector"] = selector
    assert_message(*render(draft))


# --- the wizard's import (ctrl+o) and export (ctrl+s) --------------------------------------------------------

def import_bytes(content: bytes, tmp: Path):
    path = tmp / "import.yaml"
    path.write_bytes(content)
    try:
        return import_draft(path)
    except RlarkError as exc:
        text = str(exc)
        assert text and "\n" not in text.strip() and len(text) <= MAX_LINE and "Traceback" not in text, text
        return None


@fuzz("wizard-import-bytes")
@given(st.binary(max_size=400))
def test_wizard_import_of_random_bytes(content):
    with tempfile.TemporaryDirectory() as tmp:
        import_bytes(content, Path(tmp))


@fuzz("wizard-import-yaml")
@given(st.dictionaries(st.sampled_from(["name", "type", "header", "roles", "domain", "sshPublicKey", "record",
                                        "runScript", "extra"]), values, max_size=4))
def test_wizard_import_then_export_round_trips(changes):
    """Whatever imports also exports, and the exported file imports to the same draft."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        loaded = import_bytes(yaml.safe_dump({**DRAFT, **changes}, allow_unicode=True).encode(), tmp)
        if loaded is None:
            return
        draft, _ = loaded
        export_draft(tmp / "out" / "export.yaml", draft)
        again, _ = load_draft((tmp / "out" / "export.yaml").read_bytes())
        assert again == draft


# --- submit -f --dry-run against the sandbox -------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(reliability_sandbox, tmp_path_factory):
    """`rlark --kubeconfig <sandbox> ...` with no user config and a private state dir."""
    state = tmp_path_factory.mktemp("fuzz-state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLARK_CONFIG", str(state / "config.yaml"))
        patch.setenv("RLARK_STATE_DIR", str(state / "state"))
        patch.delenv("KUBECONFIG", raising=False)
        yield lambda *argv: run("--kubeconfig", str(reliability_sandbox.kubeconfig), *argv)


def submit_dry_run(cluster, content: bytes):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "job.yaml"
        path.write_bytes(content)
        return cluster("submit", "-f", str(path), "--dry-run")


def sandbox_draft() -> dict:
    from rlark_sandbox.seed import demo_draft
    return {**demo_draft("/tmp/rlark-fuzz"), "name": "fuzz-job"}


def sandbox_manifest() -> dict:
    from rlark_sandbox.seed import demo_nodes
    from rlark_tui.jobspec.render import render_job
    draft, _ = load_draft(sandbox_draft())
    return render_job(draft, demo_nodes())


DRAFT_PATHS = ["name", "roles", "roles.0", "roles.0.selector", "roles.0.env", "roles.0.gpu", "roles.0.cluster",
               "roles.1.mounts", "roles.2.devices", "domain", "record", "record.expectedNumNodes", "sshPublicKey",
               "header", "type"]
MANIFEST_PATHS = ["apiVersion", "kind", "metadata", "metadata.name", "metadata.annotations", "spec", "spec.tasks",
                  "spec.tasks.0", "spec.tasks.0.nodeSelector", "spec.tasks.0.head", "spec.tasks.0.kubernetes",
                  "spec.tasks.0.kubernetes.workload", "spec.tasks.0.kubernetes.workload.replicas",
                  "spec.tasks.0.kubernetes.workload.template.spec.containers",
                  "spec.tasks.0.kubernetes.workload.template.spec.containers.0.image",
                  "spec.tasks.1.name", "spec.domain", "status"]


@fuzz("submit-dry-run-draft")
@given(st.lists(st.tuples(st.sampled_from(DRAFT_PATHS), values), min_size=1, max_size=3))
def test_submit_dry_run_of_fuzzed_drafts(cluster, changes):
    data = sandbox_draft()
    for path, value in changes:
        data = mutate(data, path, value)
    assert_message(*submit_dry_run(cluster, yaml.safe_dump(data, allow_unicode=True).encode()))


@fuzz("submit-dry-run-manifest")
@given(st.lists(st.tuples(st.sampled_from(MANIFEST_PATHS), values), min_size=1, max_size=3))
def test_submit_dry_run_of_fuzzed_manifests(cluster, changes):
    data = sandbox_manifest()
    for path, value in changes:
        data = mutate(data, path, value)
    assert_message(*submit_dry_run(cluster, yaml.safe_dump(data, allow_unicode=True).encode()))


@fuzz("submit-dry-run-bytes")
@given(st.one_of(st.binary(max_size=200),
                 st.text(alphabet=st.sampled_from(list("kind:Job apiVersion rlinf.io/v1alpha1\n-[]{}'\"#&*!|>")),
                         max_size=120).map(str.encode)))
def test_submit_dry_run_of_noise(cluster, content):
    assert_message(*submit_dry_run(cluster, content))


# --- `/` filters: the Matcher of every list and log pane -----------------------------------------------------

REGEX_ALPHABET = list("ab.*+?()[]{}|^$\\-,:=!<>0123456789PdwsSbBAZz#") + ["(?P<", "(?<=", "(?i)", "\\N{", "{9999}"]
LINES = ["demo-ppo   Running   3/3", "", "ERROR Traceback\x1b[31m", "日本語 ログ", "a" * 200]


def assert_matcher(text: str) -> None:
    matcher = make_matcher(text)
    assert "\n" not in matcher.error
    for line in LINES:
        matcher.matches(line)
        matcher.spans(line)
        matcher.matches_row(f"{line}\n{text}".lower(), [line, text])


@fuzz("filter-regex")
@given(st.lists(st.sampled_from(REGEX_ALPHABET), max_size=25).map("".join))
def test_filter_regex_like_input(text):
    assert_matcher(text)


@fuzz("filter-regex-text")
@given(st.one_of(st.text(max_size=60), st.sampled_from(["a{4294967296}", "x{99999999999999999999}",
                                                        "(" * 1200 + ")" * 1200, "[" * 3000, "(?" * 500])))
def test_filter_arbitrary_text(text):
    assert_matcher(text)


# --- `get -l` selectors and `logs --since` durations -------------------------------------------------------------

selectors = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(["a", "rlinf.io/job", "=", "==", "!=", ",", " in ", " notin ", "(", ")", "!", "x",
                              "demo-ppo", " ", "/", "-", "9" * 70]), max_size=10).map("".join))


@fuzz("get-selector")
@given(selectors, st.sampled_from(["jobs", "pods", "nodes", "tasks"]))
def test_get_label_selectors(cluster, selector, resource):
    assert_message(*cluster("get", resource, "-A", f"--selector={selector}"))


durations = st.one_of(
    st.text(max_size=20),
    st.lists(st.sampled_from(["1", "0", "9" * 400, ".", "5", "h", "m", "s", "ms", "us", "-", " ", "e9", "１"]),
             max_size=8).map("".join))


@fuzz("logs-since")
@given(durations)
def test_logs_since_durations(cluster, since):
    assert_message(*cluster("logs", "demo-ppo", f"--since={since}"))


# --- numeric flags: --request-timeout (every command), check --wait, stop/start/delete --timeout ---------------

seconds = st.one_of(st.floats(), st.text(max_size=12), st.sampled_from(["nan", "inf", "-inf", "1e300", "1e-300", "0",
                                                                        "-0.0", "2592000", "0x10", "1_0"]))


@fuzz("request-timeout")
@given(seconds)
def test_request_timeout_values(cluster, value):
    assert_message(*cluster(f"--request-timeout={value}", "get", "jobs"))


@pytest.mark.parametrize("argv", [("check", "demo-ppo", "--wait"), ("stop", "demo-ppo", "--wait", "-y", "--timeout"),
                                  ("delete", "demo-ppo", "--wait", "-y", "--timeout")], ids=["check", "stop", "delete"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "-inf"])
def test_waits_that_would_never_end_or_never_start_are_usage_errors(cluster, argv, value):
    code, out, err = cluster(*argv[:-1], f"{argv[-1]}={value}")
    assert code == 2 and out == "" and err.startswith("error: --") and len(err.splitlines()) == 1, err


# --- kubeconfig files (--kubeconfig) -------------------------------------------------------------------------------

KUBECONFIG_PATHS = ["apiVersion", "kind", "clusters", "clusters.0", "clusters.0.name", "clusters.0.cluster",
                    "clusters.0.cluster.server", "clusters.0.cluster.certificate-authority-data", "contexts",
                    "contexts.0", "contexts.0.name", "contexts.0.context", "contexts.0.context.cluster",
                    "contexts.0.context.user", "contexts.0.context.namespace", "current-context", "users",
                    "users.0", "users.0.name", "users.0.user", "users.0.user.token", "extensions", "preferences"]


@contextlib.contextmanager
def this_machine_only():
    """No name lookup and no connection past this machine: a host that is not a loopback (or unspecified) address
    or `localhost` is refused as a name that does not resolve, never looked up (a fuzzed server, `example.com`)."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else str(host)
        with contextlib.suppress(ValueError):
            address = ipaddress.ip_address(name.strip("[]"))
            if address.is_loopback or address.is_unspecified:
                return real(host, *args, **kwargs)
        if name != "localhost":
            raise socket.gaierror(socket.EAI_NONAME, f"{name}: not looked up in this test")
        return real(host, *args, **kwargs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "getaddrinfo", getaddrinfo)
        yield


@fuzz("kubeconfig")
@pytest.mark.filterwarnings("error:URLs without a scheme")
@given(st.lists(st.tuples(st.sampled_from(KUBECONFIG_PATHS), values), min_size=1, max_size=3))
def test_kubeconfig_files(reliability_sandbox, cluster, changes):
    """A fuzzed `server:` never reaches urllib3 without a scheme (it warned, and looked a fuzzed name up) and no
    request leaves the machine (this_machine_only)."""
    data = yaml.safe_load(Path(reliability_sandbox.kubeconfig).read_text())
    for path, value in changes:
        data = mutate(data, path, value)
    with tempfile.TemporaryDirectory() as tmp, this_machine_only():
        path = Path(tmp) / "kubeconfig"
        path.write_text(yaml.safe_dump(data, allow_unicode=True))
        code, out, err = run("--kubeconfig", str(path), "--request-timeout=5", "get", "jobs")
    assert_message(code, out, err)
    assert reliability_sandbox.token not in out + err


# --- the rlark config file ($RLARK_CONFIG) ---------------------------------------------------------------------

CONFIG = {"gateway": "https://rlark.example.com", "clusters": {"rlark-gpu-a": "gpu-a-admin"},
          "ray": {"token": "ray-secret-token-value", "urls": {"demo-ppo": "http://127.0.0.1:8265"}}}
CONFIG_PATHS = ["gateway", "clusters", "clusters.rlark-gpu-a", "clusters.x", "ray", "ray.token", "ray.urls",
                "ray.urls.demo-ppo", "extra"]


@fuzz("config-file")
@given(st.lists(st.tuples(st.sampled_from(CONFIG_PATHS), values), min_size=1, max_size=3),
       st.booleans())
def test_config_files(reliability_sandbox, cluster, changes, as_bytes_noise):
    data = CONFIG
    for path, value in changes:
        data = mutate(data, path, value)
    text = yaml.safe_dump(data, allow_unicode=True).encode()
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        path = Path(tmp) / "config.yaml"
        path.write_bytes(text[: len(text) // 2] if as_bytes_noise else text)
        patch.setenv("RLARK_CONFIG", str(path))
        code, out, err = cluster("config", "--no-check")
    assert_message(code, out, err)
    token = (data.get("ray") or {}).get("token") if isinstance(data.get("ray"), dict) else None
    if isinstance(token, str) and len(token) > 8:
        assert token not in out + err


# --- object names, roles and Pods typed on the command line --------------------------------------------------------
# Control characters are left out: a name typed with a newline in it is echoed as typed (messages quote what the
# user gave), which is one message over two lines, not a crash.

names = st.one_of(st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40),
                  st.sampled_from(["../x", "a/b", "%2e%2e", "demo-ppo/../demo-ppo", "?watch=1", "#", "a" * 300,
                                   "demo-ppo\x00", " demo-ppo", "ДЕМО", "demo-ppo;rm -rf", "$(id)"]))


@fuzz("object-names")
@given(names, st.sampled_from(["get", "describe", "logs-role", "logs-pod"]))
def test_names_roles_and_pods(cluster, name, command):
    argv = {"get": ("get", "jobs", f"--namespace={name}", name), "describe": ("describe", "job", name),
            "logs-role": ("logs", "demo-ppo", f"--role={name}"), "logs-pod": ("logs", name, f"--pod={name}")}
    assert_message(*cluster(*argv[command]))


# --- what is typed into the wizard's fields: selectors, env, devices, counts, mounts -----------------------------

FIELD_PARSERS = {"selector": (wf.parse_selector, wf.format_selector), "env": (wf.parse_env, wf.format_env),
                 "devices": (wf.parse_devices, wf.format_devices), "count": (wf.parse_count, str),
                 "mounts": (wf.parse_mounts, wf.format_mounts)}
field_text = st.one_of(st.text(max_size=60),
                       st.lists(st.sampled_from(["a", "=", "b", " ", ",", "\n", "#", "1", "²", "٣", "9" * 5000,
                                                 "host", "storage", "/data", '""', "rlinf.io/x", "-"]),
                                max_size=10).map("".join))


@fuzz("wizard-fields")
@given(st.sampled_from(sorted(FIELD_PARSERS)), field_text)
def test_wizard_field_text(field, text):
    """A field's text becomes a value or a FormError shown beside it; what parses, formats and parses again."""
    parse, show = FIELD_PARSERS[field]
    try:
        value = parse(text)
    except wf.FormError as exc:
        assert str(exc) and "\n" not in str(exc) and len(str(exc)) <= MAX_LINE
        return
    if field == "selector" and any("," in v and "" in v.split(",") for v in value.values()):
        return  # `a= a=` is the multi-value ",": its text has no way to show an empty alternative
    assert parse(show(value)) == value


@fuzz("sandbox-seed")
@given(st.one_of(st.text(max_size=20), st.lists(st.sampled_from(["scale", ":", "1", "²", "9" * 5000, "demo", "-1"]),
                                                max_size=5).map("".join)))
def test_sandbox_seed_names(seed):
    """`rlark sandbox --seed` is parsed before anything starts: a plan or one usage line."""
    from rlark_sandbox.seed import parse
    try:
        kind, jobs, pods, age = parse(seed)
    except RlarkError as exc:
        assert str(exc).startswith("unknown seed") and len(str(exc)) <= MAX_LINE
        return
    assert kind in ("demo", "none", "scale") and jobs >= 0 and pods >= 0 and age >= 0


# --- any command line: random words from rlark's own vocabulary -------------------------------------------------
# Always --readonly (nothing in the shared sandbox changes) and never a command that serves or follows forever
# (sandbox, demo, no command = the TUI, logs -f, get -w).

COMMANDS = [("draft", "render"), ("draft", "new"), ("draft",), ("get",), ("describe",), ("logs",), ("submit",),
            ("stop",), ("start",), ("delete",), ("config", "--no-check"), ("check",)]
WORDS = ["jobs", "job", "pods", "nodes", "tasks", "domains", "demo-ppo", "x", "", "²", "../x", "-", "--",
         "-A", "-n", "rlark-gpu-a", "-l", "rlinf.io/job=demo-ppo", "-o", "json", "yaml", "wide", "name", "--tail",
         "3", "-1", "--since", "5m", "--role", "actor", "--pod", "demo-ppo-actor-0", "--timestamps", "-p",
         "--nodes", "--filename", "--dry-run", "-y", "--wait", "--timeout", "0.5", "--format", "md", "--output",
         "--notes", "--lang", "zh", "--type", "rl", "--name", "--image", "--context", "rlark-sandbox", "--help"]


@fuzz("any-argv")
@given(st.sampled_from(COMMANDS), st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(["DRAFT", "NODES",
                                                                                                 "DIR", "MISSING"])),
                                           max_size=6))
def test_any_command_line(cluster, command, words):
    files = {"DRAFT": str(DATA / "draft-rl.yaml"), "NODES": str(NODES), "DIR": str(DATA), "MISSING": "/nonexistent"}
    argv = [files.get(word, word) for word in (*command, *words)]
    if "--output" in argv:
        argv = [word for word in argv if word != "--output"]
    assert_message(*cluster("--readonly", "--request-timeout=10", *argv))
