"""Every create-job rule (W1–W14, platform pitfalls): a good draft is accepted, a bad one refused at its field."""

from __future__ import annotations

import pytest

from rlark_tui.jobspec.build import build_job
from rlark_tui.jobspec.draft import load_draft
from rlark_tui.jobspec.findings import has_errors
from rlark_tui.jobspec.validate import validate

from .conftest import DELETE, set_path
from .jobschema import assert_valid_job

DIGEST = "registry.example.com/rlinf@sha256:" + "0123456789abcdef" * 4
OTHER_DIGEST = "registry.example.com/rlinf@sha256:" + "fedcba9876543210" * 4


def findings_for(mapping, nodes, **kwargs):
    draft, load_findings = load_draft(mapping)
    return load_findings + validate(draft, nodes, **kwargs)


def test_good_draft_has_no_errors_and_renders_a_valid_job(good_mapping, nodes):
    result = build_job(good_mapping, nodes, existing_jobs=["other-job"], storage_classes={
        "rlark-gpu-a": ["oss-standard"]}, domains=["team-a"])
    assert result.findings == []
    assert result.ok
    assert_valid_job(result.manifest)


# (rule, changes to the good draft, expected level, expected field)
BAD = [
    ("W3 name required", {"name": ""}, "error", "name"),
    ("W3 name uppercase", {"name": "PPO-7"}, "error", "name"),
    ("W3 name ends with dash", {"name": "ppo-"}, "error", "name"),
    ("W3 name underscore", {"name": "ppo_7"}, "error", "name"),
    ("W3 name starts with digit (head Service)", {"name": "7ppo"}, "error", "name"),
    ("W3 name over 63", {"name": "a" * 64}, "error", "name"),
    ("§6.6 <job>-<task> over 52", {"name": "a" * 41}, "error", "name"),
    ("W3 name not text", {"name": 12}, "error", "name"),
    ("W4 unknown type", {"type": "training"}, "error", "type"),
    ("W4 type differs from roles", {"type": "evaluation"}, "warning", "type"),
    ("W4 no roles", {"roles": [], "header": "x"}, "error", "roles"),
    ("W4 roles not a list", {"roles": {"name": "a"}}, "error", "roles"),
    ("W4 empty role name", {"roles[2].name": ""}, "error", "roles[2].name"),
    ("W4 role name without letters", {"roles[2].name": "!!"}, "error", "roles[2].name"),
    ("W4 names equal ignoring case", {"roles[2].name": "ACTOR"}, "error", "roles[2].name"),
    ("W4 derived names collide", {"roles[1].name": "Actor!"}, "error", "roles[1].name"),
    ("W1 platform role", {"roles[1].role": "Learner"}, "error", "roles[1].role"),
    ("W2 header missing", {"header": DELETE}, "error", "header"),
    ("W2 header names no role", {"header": "learner"}, "error", "header"),
    ("W6 header matches 2 Nodes", {"header": "rollout"}, "error", "roles[1].selector"),
    ("W5 selector matches nothing", {"roles[1].selector": {"pool": "none"}}, "error", "roles[1].selector"),
    ("W11 empty selector", {"roles[1].selector": {}}, "error", "roles[1].selector"),
    ("W5 comma multi-value", {"roles[1].selector": {"kubernetes.io/hostname": "gpu-a2,gpu-a3"}}, "error",
     "roles[1].selector.kubernetes.io/hostname"),
    ("W5 empty value", {"roles[1].selector": {"pool": ""}}, "error", "roles[1].selector.pool"),
    ("W11 selector spans clusters", {"roles[1].selector": {"pool": "rollout"}}, "error", "roles[1].selector"),
    ("W5 cluster not the matched one", {"roles[2].cluster": "rlark-gpu-a"}, "error", "roles[2].cluster"),
    ("W5 cluster missing", {"roles[2].cluster": DELETE}, "error", "roles[2].cluster"),
    ("W5 unknown cluster", {"roles[2].cluster": "rlark-moon"}, "error", "roles[2].cluster"),
    ("§4 cluster-id selector", {"roles[2].selector": {"rlark.io/cluster-id": "rlark-edge"}}, "error",
     "roles[2].selector.rlark.io/cluster-id"),
    ("selector list form needs key=value", {"roles[2].selector": ["pool"]}, "error", "roles[2].selector[0]"),
    ("W11b spans clusters without domain", {"domain": DELETE}, "error", "domain"),
    ("W12 domain syntax", {"domain": "Team A"}, "error", "domain"),
    ("Offline matched Node", {"roles[1].selector": {"site": "a", "pool": "spare"}}, "warning",
     "roles[1].selector"),
    ("W7 GPU above allocatable", {"roles[0].gpu": 9}, "error", "roles[0].gpu"),
    ("W7 GPU above free (other roles share)", {"roles[1].gpu": 8}, "warning", "roles[1].gpu"),
    ("W7 GPU on a Node without GPUs", {"roles[2].gpu": 1}, "warning", "roles[2].gpu"),
    ("W7 GPU not a number", {"roles[0].gpu": "eight"}, "error", "roles[0].gpu"),
    ("W7 GPU negative", {"roles[0].gpu": -1}, "error", "roles[0].gpu"),
    ("W7 GPU absurdly large", {"roles[2].gpu": 10**400}, "error", "roles[2].gpu"),
    ("W7 device absurdly large", {"roles[2].devices": {"rlinf.io/franka": 10**400}}, "error",
     "roles[2].devices.rlinf.io/franka"),
    ("W7 device above allocatable", {"roles[2].devices": {"rlinf.io/franka": 2}}, "error",
     "roles[2].devices.rlinf.io/franka"),
    ("W7 device not reported", {"roles[1].devices": {"rlinf.io/franka": 1}}, "warning",
     "roles[1].devices.rlinf.io/franka"),
    ("W7 device outside rlinf.io", {"roles[2].devices": {"nvidia.com/gpu": 1}}, "error",
     "roles[2].devices.nvidia.com/gpu"),
    ("W10 cpu quantity", {"roles[0].cpu": "lots"}, "error", "roles[0].cpu"),
    ("W10 memory above allocatable", {"roles[0].memory": "1Ti"}, "error", "roles[0].memory"),
    ("W10 cpu above free", {"roles[0].cpu": "62"}, "warning", "roles[0].cpu"),
    ("W8 image required", {"roles[1].image": ""}, "error", "roles[1].image"),
    ("W8 image placeholder", {"roles[1].image": "<image>"}, "error", "roles[1].image"),
    ("W8 image with spaces", {"roles[1].image": "a b"}, "error", "roles[1].image"),
    ("W8 short digest", {"roles[1].image": "r/rlinf@sha256:abc"}, "error", "roles[1].image"),
    ("W8 latest", {"roles[0].image": "rlinf/rlinf:latest"}, "warning", "roles[0].image"),
    ("W8 no tag", {"roles[0].image": "rlinf/rlinf"}, "warning", "roles[0].image"),
    ("W8 mutable tag", {"roles[0].image": "registry:5000/rlinf/rlinf:0.2"}, "warning", "roles[0].image"),
    ("W8 different images", {"roles[2].image": OTHER_DIGEST}, "warning", "roles[2].image"),
    ("W12 run script required", {"runScript": "  \n"}, "error", "runScript"),
    ("W12 run script missing", {"runScript": DELETE}, "error", "runScript"),
    ("W12 SSH key malformed", {"sshPublicKey": "ssh-ed25519 not-base64!"}, "error", "sshPublicKey"),
    ("W12 SSH key wrong type", {"sshPublicKey": "hello world"}, "error", "sshPublicKey"),
    ("W12 SSH private key", {"sshPublicKey": "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n"}, "error",
     "sshPublicKey"),
    ("W12 SSH key data mismatch", {"sshPublicKey": "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIHXg"}, "error",
     "sshPublicKey"),
    ("W12 TensorBoard dir relative", {"tensorboardDir": "tb"}, "error", "tensorboardDir"),
    ("W12 TensorBoard dir not on a mount", {"tensorboardDir": "/tmp/tb"}, "warning", "tensorboardDir"),
    ("W9 hostPath relative", {"roles[0].mounts[0].source": "data"}, "error", "roles[0].mounts[0].source"),
    ("W9 hostPath missing", {"roles[0].mounts[0].source": DELETE}, "error", "roles[0].mounts[0].source"),
    ("W9 target relative", {"roles[0].mounts[0].target": "data"}, "error", "roles[0].mounts[0].target"),
    ("W9 mount type", {"roles[0].mounts[0].type": "nfs"}, "error", "roles[0].mounts[0].type"),
    ("W9 storage class required", {"roles[0].mounts[1].storageClass": DELETE}, "error",
     "roles[0].mounts[1].storageClass"),
    ("W9 duplicate target", {"roles[0].mounts[1].target": "/data"}, "error", "roles[0].mounts[1].target"),
    ("W13 mount shadows /workspace", {"roles[0].mounts[0].target": "/workspace"}, "warning",
     "roles[0].mounts[0].target"),
    ("W13 mount inside /opt", {"roles[0].mounts[0].target": "/opt/venv"}, "warning",
     "roles[0].mounts[0].target"),
    ("W13 mount hides run script dir", {"roles[0].mounts[0].target": "/srv",
                                        "runScript": "cd /srv/RLinf && bash run.sh"}, "warning",
     "roles[0].mounts[0].target"),
    ("§6.8 shared RWO claim", {"roles[1].mounts": [{"type": "storage", "storageClass": "oss-standard",
                                                   "target": "/ckpt"}]}, "warning", "roles[1].mounts[0]"),
    ("W9 mount not a mapping", {"roles[0].mounts": ["/data:/data"]}, "error", "roles[0].mounts[0]"),
    ("W9 env name invalid", {"roles[0].env": {"1BAD": "x"}}, "error", "roles[0].env.1BAD"),
    ("W9 env reserved RLARK_", {"roles[0].env": {"RLARK_TASK_ROLE": "x"}}, "error",
     "roles[0].env.RLARK_TASK_ROLE"),
    ("W9 env reserved POD_NAME", {"roles[0].env": {"POD_NAME": "x"}}, "error", "roles[0].env.POD_NAME"),
    ("W9 env reserved rank", {"roles[0].env": {"RLINF_NODE_RANK": "0"}}, "error", "roles[0].env.RLINF_NODE_RANK"),
    ("W9 env value a list", {"roles[0].env": {"A": [1]}}, "error", "roles[0].env.A"),
    ("C8 secret in env", {"roles[0].env": {"HF_TOKEN": "hf_x"}}, "warning", "roles[0].env.HF_TOKEN"),
    ("C8 token-shaped env value", {"roles[0].env": {"REPO": "https://bob:pw@git.example.com/x"}}, "warning",
     "roles[0].env.REPO"),
    ("C8 secret in the record", {"record.notes": "contact bob, password=hunter2"}, "warning", "record.notes"),
    ("unknown top field", {"tensorBoardDir": "/ckpt/tb"}, "error", "tensorBoardDir"),
    ("unknown role field", {"roles[0].replicas": 3}, "error", "roles[0].replicas"),
    ("unknown mount field", {"roles[0].mounts[0].readOnly": True}, "error", "roles[0].mounts[0].readOnly"),
    ("W14 record unknown field", {"record.commit": "abc"}, "error", "record.commit"),
    ("W14 record short SHA", {"record.codeRef": "8803065"}, "warning", "record.codeRef"),
    ("W14 record bad pattern", {"record.progressPattern": "Step: ("}, "error", "record.progressPattern"),
    ("W14 record nested quantifier", {"record.progressPattern": "^Global Step: (a+)+$"}, "warning",
     "record.progressPattern"),
    ("W14 marker nested quantifier", {"record.startupMarker": r"(\w*,)*done"}, "warning", "record.startupMarker"),
    ("W14 record bad startup marker", {"record.startupMarker": "started ("}, "error", "record.startupMarker"),
    ("W14 record node count", {"record.expectedNumNodes": 4}, "warning", "record.expectedNumNodes"),
    ("W14 record wait not positive", {"record.maxWaitSeconds": 0}, "error", "record.maxWaitSeconds"),
    ("C5 output not persisted", {"record.outputPath": "/tmp/out"}, "warning", "record.outputPath"),
    ("C4 placement mode unknown", {"record.placementMode": "packed"}, "warning", "record.placementMode"),
    ("C4 node groups not a list", {"record.nodeGroups": "0-3"}, "error", "record.nodeGroups"),
    ("C4 component placement too deep", {"record.componentPlacement": {"a": [[[[[[[[["x"]]]]]]]]]}}, "error",
     "record.componentPlacement"),
    ("C5 output relative", {"record.outputPath": "out"}, "error", "record.outputPath"),
]


@pytest.mark.parametrize("rule, changes, level, field", BAD, ids=[case[0] for case in BAD])
def test_bad_draft_is_refused_at_the_field(rule, changes, level, field, good_mapping, nodes):
    mapping = good_mapping
    for path, value in changes.items():
        mapping = set_path(mapping, path, value)
    findings = findings_for(mapping, nodes, storage_classes={"rlark-gpu-a": ["oss-standard"]},
                            domains=["team-a"])
    assert any(f.level == level and f.field == field for f in findings), \
        f"{rule}: expected {level} at {field}, got:\n" + "\n".join(map(str, findings))
    if level == "warning":
        assert not has_errors(findings), "\n".join(map(str, findings))


GOOD = [
    ("W2 head need not be first", {"header": "Environment", "roles[2].selector": {"kubernetes.io/hostname": "robot-1"},
                                   "tensorboardDir": DELETE, "record.expectedNumNodes": 4}),
    ("W4 data collection, one cluster, no domain", {
        "type": "data-collection", "header": "Environment", "domain": DELETE, "tensorboardDir": DELETE,
        "roles": [{"name": "Environment", "role": "Env", "cluster": "rlark-edge",
                   "selector": {"kubernetes.io/hostname": "robot-2"}, "image": DIGEST}],
        "record": DELETE}),
    ("W4 role mapped from its name", {"roles[1].role": DELETE}),
    ("W4 type left to the roles", {"type": DELETE}),
    ("W5 several distinct keys", {"roles[1].selector": {"pool": "rollout", "site": "a",
                                                       "kubernetes.io/hostname": "gpu-a3"}}),
    ("W5 selector typed as key=value", {"roles[1].selector": ["pool=rollout", "site=a"]}),
    ("W7 GPU equal to free", {"roles[1].gpu": 6}),
    ("W7 GPU missing = 0", {"roles[1].gpu": DELETE}),
    ("W9 no mounts, no env", {"roles[0].mounts": DELETE, "roles[0].env": DELETE, "tensorboardDir": DELETE,
                              "record.outputPath": DELETE}),
    ("W9 env numbers become text", {"roles[0].env": {"SEED": 1, "DEBUG": True}}),
    ("W12 no SSH key, no domain needed", {"sshPublicKey": DELETE}),
    ("W12 rsa key", {"sshPublicKey": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ== bob"}),
    ("W14 no record", {"record": DELETE}),
    ("C4 RLinf placement in the record", {"record.placementMode": "disaggregated",
                                          "record.componentPlacement": {"actor": "0", "rollout": "1-2",
                                                                        "env": "3-4"},
                                          "record.nodeGroups": [{"label": "franka", "node_ranks": "3-4"}],
                                          "record.runtimeVersions": {"ray": "2.47.1", "python": "3.11"}}),
]


@pytest.mark.parametrize("rule, changes", GOOD, ids=[case[0] for case in GOOD])
def test_good_variants_are_accepted_and_render_valid_jobs(rule, changes, good_mapping, nodes):
    mapping = good_mapping
    for path, value in changes.items():
        mapping = set_path(mapping, path, value)
    result = build_job(mapping, nodes, storage_classes={"rlark-gpu-a": ["oss-standard"]}, domains=["team-a"])
    assert result.ok, f"{rule}:\n" + "\n".join(map(str, result.findings))
    assert_valid_job(result.manifest)


def test_live_facts_turn_offline_warnings_into_errors(good_mapping, nodes):
    offline = findings_for(good_mapping, nodes)
    assert {(f.level, f.field) for f in offline} == {
        ("warning", "domain"), ("warning", "roles[0].mounts[1].storageClass")}
    live = findings_for(good_mapping, nodes, storage_classes={"rlark-gpu-a": ["s3"]}, domains=["team-b"],
                        existing_jobs=[{"metadata": {"name": "ppo-maniskill-7"}}])
    assert {(f.level, f.field) for f in live} >= {
        ("error", "domain"), ("error", "roles[0].mounts[1].storageClass"), ("error", "name")}


def test_duplicate_yaml_keys_are_findings(nodes):
    text = ("name: a\nname: b\nheader: x\nroles:\n- name: x\n  env:\n    A: 1\n    A: 2\n")
    draft, findings = load_draft(text)
    fields = {f.field for f in findings}
    assert {"name", "roles[0].env.A"} <= fields and draft.name == "b"


def test_findings_list_errors_first(good_mapping, nodes):
    mapping = set_path(set_path(good_mapping, "roles[0].image", "rlinf:latest"), "runScript", "")
    findings = findings_for(mapping, nodes)
    levels = [f.level for f in findings]
    assert levels == sorted(levels, key=lambda level: level != "error") and "warning" in levels


@pytest.mark.parametrize("storage_classes", [{"rlark-gpu-a": ["oss-standard"]}, {"gpu-a": ["oss-standard"]}])
def test_storage_classes_keyed_by_namespace_or_agent_id(storage_classes, good_mapping, nodes):
    """The real gateway lists a class's clusters as agent IDs (`gpu-a`); the draft names `rlark-gpu-a`."""
    findings = findings_for(good_mapping, nodes, storage_classes=storage_classes, domains=["team-a"])
    assert not [f for f in findings if f.field.endswith("storageClass")], "\n".join(map(str, findings))


def test_a_run_script_of_path_runs_is_read_in_linear_time(good_mapping, nodes):
    """Issue 33 item 3, a third round: the code-path pattern over a run script tried each `/` of a run of path
    characters to its end, so a script of '/a' x 20,000 (40 KB, an imported draft) took 6.8 s to validate and
    one of 1 MB hours. Each run is now read once; the paths found are those the scan from every `/` found."""
    import time

    from rlark_tui.jobspec.validate import _code_paths

    assert _code_paths("cd /work && bash /opt/run.sh.bak; python x/train.py-cd  /data/ :/a@cd /b /.sh") == \
        ["/work", "/opt/run.sh", "/train.py", "/data", "/b"]
    started = time.monotonic()
    findings_for({**good_mapping, "runScript": "/a" * 500_000}, nodes)
    assert time.monotonic() - started < 5
