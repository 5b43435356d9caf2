"""`rlark draft render|new` as a user runs it: exit codes 0/1/2, stdout only on success, one finding per line,
and never a traceback whatever the draft holds (hypothesis)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model.jobschema import assert_valid_job

from rlark_tui.cli import main
from rlark_tui.jobspec.draft import DRAFT_TYPES
from tests.mutation import mutate

DATA = Path(__file__).parent / "model" / "data"
DRAFT = DATA / "draft-rl.yaml"
NODES = DATA / "nodes.yaml"
FINDING_LINE = re.compile(r"^(error|warning) \S.*: \S")
USAGE_LINE = re.compile(r"^error: \S")


def run(*argv: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if stdin is not None:
            with _stdin(stdin):
                code = main(list(argv))
        else:
            code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _stdin(data: bytes):
    import sys
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        yield
    finally:
        sys.stdin = saved


def write(tmp: Path, name: str, content: str | bytes) -> str:
    path = tmp / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


def assert_outcome(code: int, out: str, err: str) -> None:
    """The contract of `draft render` for any input."""
    assert code in (0, 1, 2), code
    lines = err.splitlines()
    if code == 2:
        assert out == "" and len(lines) == 1 and USAGE_LINE.match(lines[0]), err
        return
    assert all(FINDING_LINE.match(line) for line in lines), err
    if code == 1:
        assert out == "" and any(line.startswith("error ") for line in lines)
    else:
        assert not any(line.startswith("error") for line in lines)
        assert_valid_job(yaml.safe_load(out))


def test_good_draft_prints_the_job_and_only_warnings():
    code, out, err = run("draft", "render", str(DRAFT), "--nodes", str(NODES))
    assert code == 0
    assert_outcome(code, out, err)
    job = yaml.safe_load(out)
    assert job["metadata"]["name"] == "ppo-maniskill-7"
    assert err.splitlines() == [
        "warning roles[0].mounts[1].storageClass: storage class 'oss-standard' cannot be checked offline; "
        "confirm it exists in rlark-gpu-a",
        "warning domain: network domain 'team-a' cannot be checked offline; confirm it exists"]


def test_global_flags_after_the_command_are_accepted():
    code, out, _ = run("draft", "render", str(DRAFT), "--nodes", str(NODES), "--readonly")
    assert code == 0 and out.startswith("apiVersion: rlinf.io/v1alpha1")


def test_errors_exit_1_with_nothing_on_stdout(tmp_path):
    mapping = yaml.safe_load(DRAFT.read_text())
    mapping["roles"][1]["selector"] = {"pool": "rollout"}
    mapping["roles"][0]["env"] = {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz"}
    mapping["colour"] = "blue"
    code, out, err = run("draft", "render", write(tmp_path, "d.yaml", yaml.safe_dump(mapping)), "--nodes", str(NODES))
    assert_outcome(code, out, err)
    assert code == 1 and out == ""
    assert any(line.startswith("error roles[1].selector: matches Nodes in 2 clusters") for line in err.splitlines())
    assert "error colour: unknown field" in err
    assert "warning roles[0].env.HF_TOKEN:" in err and "hf_abcdef" not in err


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe\x00junk", "not UTF-8"),
    (b"name: [unclosed\n", "not valid YAML at line"),
    (b"- just\n- a list\n", "must be a YAML mapping"),
    (b"", "must be a YAML mapping"),
    (b"42\n", "must be a YAML mapping"),
    (b"[" * 5000, "nest"),
    (b"a: !!python/object:os.system x\n", "not valid YAML"),
], ids=["binary", "syntax", "list", "empty", "scalar", "deep", "python-tag"])
def test_unusable_drafts_exit_2_with_one_line(tmp_path, content, message):
    code, out, err = run("draft", "render", write(tmp_path, "d.yaml", content), "--nodes", str(NODES))
    assert_outcome(code, out, err)
    assert code == 2 and message in err


def test_unreadable_inputs_exit_2(tmp_path):
    for argv, message in [
        (("draft", "render", str(tmp_path / "missing.yaml"), "--nodes", str(NODES)), "no such file"),
        (("draft", "render", str(tmp_path), "--nodes", str(NODES)), "is a directory"),
        (("draft", "render", str(DRAFT), "--nodes", write(tmp_path, "n.yaml", "kind: Pod\nitems: 3\n")),
         "Node list must be"),
        (("draft", "render", str(DRAFT), "--nodes", write(tmp_path, "p.yaml",
                                                          "- {kind: Pod, metadata: {name: x}}\n")), "not an rlinf.io Node"),
    ]:
        code, out, err = run(*argv)
        assert_outcome(code, out, err)
        assert code == 2 and message in err, err
    if os.geteuid() != 0:
        locked = write(tmp_path, "locked.yaml", "name: x\n")
        os.chmod(locked, 0)
        code, _, err = run("draft", "render", locked, "--nodes", str(NODES))
        assert code == 2 and "permission denied" in err


def test_oversized_draft_exits_2(tmp_path):
    code, out, err = run("draft", "render", write(tmp_path, "big.yaml", b"#" * (5 * 1024 * 1024)), "--nodes",
                         str(NODES))
    assert code == 2 and "larger than" in err and out == ""


def test_nodes_as_plain_list_and_draft_from_stdin(tmp_path):
    items = yaml.safe_load(NODES.read_text())["items"]
    nodes = write(tmp_path, "nodes.yaml", yaml.safe_dump(items))
    code, out, err = run("draft", "render", "-", "--nodes", nodes, stdin=DRAFT.read_bytes())
    assert code == 0 and yaml.safe_load(out)["spec"]["tasks"][1]["kubernetes"]["workload"]["replicas"] == 2


def fill_starter(text: str, nodes_by_role: dict[str, tuple[str, str]]) -> str:
    draft = yaml.safe_load(text)
    for role in draft["roles"]:
        cluster, node = nodes_by_role[role["role"]]
        role["cluster"] = cluster
        role["selector"] = {"kubernetes.io/hostname": node}
    return yaml.safe_dump(draft, sort_keys=False)


@pytest.mark.parametrize("draft_type", DRAFT_TYPES)
def test_starter_filled_with_real_nodes_renders(tmp_path, draft_type):
    image = "registry.example.com/rlinf@sha256:" + "ab" * 32
    code, starter, err = run("draft", "new", "--type", draft_type, "--image", image)
    assert code == 0 and err == "" and starter.startswith("# rlark job draft")
    unfilled = run("draft", "render", write(tmp_path, "raw.yaml", starter), "--nodes", str(NODES))
    assert unfilled[0] == 1 and "error roles[0].cluster: required" in unfilled[2]
    filled = fill_starter(starter, {"Actor": ("rlark-gpu-a", "gpu-a1"), "Rollout": ("rlark-gpu-a", "gpu-a2"),
                                    "Env": ("rlark-gpu-a", "gpu-a3")})
    code, out, err = run("draft", "render", write(tmp_path, "filled.yaml", filled), "--nodes", str(NODES))
    assert_outcome(code, out, err)
    assert code == 0, err
    assert err == "", err
    job = yaml.safe_load(out)
    assert sum(1 for t in job["spec"]["tasks"] if t.get("head")) == 1


def test_draft_without_action_shows_help_and_exits_2():
    code, out, err = run("draft")
    assert code == 2 and "render" in err and out == ""


# --- fuzzing: any draft gives findings (exit 1), a valid Job (exit 0) or one usage line (exit 2) ---

GOOD = yaml.safe_load(DRAFT.read_text())
PATHS = ["name", "displayName", "type", "header", "roles", "domain", "sshPublicKey", "runScript", "tensorboardDir",
         "record", "roles.0", "roles.0.name", "roles.0.role", "roles.0.cluster", "roles.0.selector", "roles.0.gpu",
         "roles.0.devices", "roles.0.cpu", "roles.0.memory", "roles.0.image", "roles.0.prepareScript",
         "roles.0.env", "roles.0.mounts", "roles.0.mounts.0", "roles.0.mounts.0.target", "roles.0.mounts.1.type",
         "roles.2.devices", "record.expectedNumNodes", "record.progressPattern", "record.maxWaitSeconds",
         "roles.1.selector.site", "roles.0.env.HF_HOME", "extra", "roles.0.extra", "record.extra",
         "record.componentPlacement", "record.nodeGroups", "record.runtimeVersions", "record.placementMode"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10**40), max_value=10**40),
                    st.sampled_from([10**400, -(10**400), 2**31, 2**63]),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
                    st.sampled_from(["gpu-a1", "rlark-gpu-a", "/data", "Actor", "8", "64Gi", "a,b", "(", "*",
                                     "rlark.io/cluster-id", "\x00", "x" * 70_000]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=12), inner, max_size=3), max_leaves=6)


DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def render_text(content: bytes) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), "draft.yaml", content)
        return run("draft", "render", path, "--nodes", str(NODES))


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(PATHS), values), min_size=1, max_size=4))
def test_fuzzed_fields_give_findings_or_a_valid_job(changes):
    mapping = GOOD
    for path, value in changes:
        mapping = mutate(mapping, path, value)
    code, out, err = render_text(yaml.dump(mapping, Dumper=DUMPER, allow_unicode=True).encode())
    assert_outcome(code, out, err)
    assert code in (0, 1)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_never_raise(content):
    assert_outcome(*render_text(content))


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("abc:-[]{}'\"\n #&*!|>%@`,?0123456789")), max_size=120))
def test_yaml_like_noise_never_raises(content):
    assert_outcome(*render_text(content.encode()))


def test_help_documents_every_draft_field():
    from rlark_tui.jobspec import draft as model_draft
    code, out, _ = run_help("draft", "--help")
    documented = set(re.findall(r"[A-Za-z]+", out.split("draft fields", 1)[1]))
    fields = (set(model_draft.TOP_FIELDS) | set(model_draft.ROLE_FIELDS) | set(model_draft.MOUNT_FIELDS)
              | set(model_draft.RECORD_FIELDS))
    assert code == 0 and fields <= documented, fields - documented


def run_help(*argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    return exit_info.value.code, out.getvalue(), ""


H100 = "NVIDIA H100 80GB HBM3"


def h100_nodes(tmp: Path) -> str:
    """nodes.yaml with the GPU model the platform's console sets on the gpu-a* Nodes."""
    items = yaml.safe_load(NODES.read_text())["items"]
    for item in items:
        if item["metadata"]["name"].startswith("gpu-a"):
            item["metadata"]["annotations"] = {"rlark.io/gpu-model": H100}
    return write(tmp, "nodes-h100.yaml", yaml.safe_dump({"items": items}))


@pytest.mark.parametrize("placement, selector, replicas", [
    (("--workers", "2"), "gpu-a1,gpu-a2,gpu-a3", 2),  # automatic: every schedulable H100 with 4 GPUs free
    (("--pick-nodes", "gpu-a3,gpu-a2"), "gpu-a3,gpu-a2", 2),
])
def test_render_places_a_role_by_gpu_model(tmp_path, placement, selector, replicas):
    code, out, err = run("draft", "render", str(DRAFT), "--nodes", h100_nodes(tmp_path), "--role", "Rollout",
                         "--gpu-model", H100, *placement)
    assert_outcome(code, out, err)
    assert code == 0, err
    rollout = yaml.safe_load(out)["spec"]["tasks"][1]
    assert rollout["nodeSelector"] == {"kubernetes.io/hostname": selector}
    assert rollout["kubernetes"]["workload"]["replicas"] == replicas


def test_render_says_why_a_placement_cannot_fit(tmp_path):
    nodes = h100_nodes(tmp_path)
    code, out, err = run("draft", "render", str(DRAFT), "--nodes", nodes, "--role", "Rollout", "--gpu-model", H100,
                         "--workers", "4")
    assert_outcome(code, out, err)
    assert code == 1
    assert (f"error roles[1].workers: 4 workers need 4 Nodes (the platform puts at most one worker of a role on "
            f"a Node), but only 3 Nodes of {H100} have 4 GPUs free") in err.splitlines()
    code, out, err = run("draft", "render", str(DRAFT), "--nodes", nodes, "--gpu-model", H100)
    assert (code, out, err) == (2, "", "error: name the role to place with --role (roles: actor, Rollout, "
                                       "Environment)\n")
    code, out, err = run("draft", "render", str(DRAFT), "--nodes", nodes, "--role", "Rollout", "--workers", "2",
                         "--pick-nodes", "gpu-a2")
    assert (code, out) == (2, "") and "the worker count follows the picked Nodes" in err
