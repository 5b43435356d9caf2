"""The rendered Job manifest is exactly what the platform expects (rlark-platform.md §2, §4), and drafts
round-trip through YAML."""

from __future__ import annotations

import json

from rlark_tui.jobspec.build import build_job
from rlark_tui.jobspec.draft import dump_draft, load_draft
from rlark_tui.jobspec.render import render_job
from rlark_tui.model.keys import LAUNCH_RECORD_ANNOTATION
from rlark_tui.model.objects import Job
from rlark_tui.model.placement import rank_starts

from .conftest import set_path
from .jobschema import assert_valid_job


def test_manifest_follows_the_platform_shape(good_mapping, nodes):
    draft, _ = load_draft(good_mapping)
    manifest = render_job(draft, nodes)
    assert_valid_job(manifest)
    assert (manifest["apiVersion"], manifest["kind"], manifest["metadata"]["name"]) == \
        ("rlinf.io/v1alpha1", "Job", "ppo-maniskill-7")
    spec = manifest["spec"]
    assert spec["domain"] == "team-a" and spec["sshPublicKey"].startswith("ssh-ed25519 ")
    actor, rollout, env = spec["tasks"]
    assert [t["name"] for t in spec["tasks"]] == ["actor", "rollout", "environment"]
    assert [t.get("head") for t in spec["tasks"]] == [True, None, None]
    assert [t["role"] for t in spec["tasks"]] == ["Actor", "Rollout", "Env"]
    assert all(t["agentType"] == "Kubernetes" for t in spec["tasks"])
    assert [t["kubernetes"]["workload"]["replicas"] for t in spec["tasks"]] == [1, 2, 2]
    assert all(t["kubernetes"]["workload"]["kind"] == "StatefulSet" for t in spec["tasks"])
    assert "runScript" in actor and "tensorBoardDir" in actor
    assert not any("runScript" in t or "tensorBoardDir" in t for t in (rollout, env))
    assert actor["nodeSelector"] == {"kubernetes.io/hostname": "gpu-a1"}

    main = actor["kubernetes"]["workload"]["template"]["spec"]["containers"]
    assert [c["name"] for c in main] == ["main"]
    container = main[0]
    assert container["env"] == [{"name": "RLARK_TASK_ROLE", "value": "actor"},
                                {"name": "HF_HOME", "value": "/data/hf"}]
    assert container["resources"] == {"requests": {"nvidia.com/gpu": "8", "cpu": "16", "memory": "64Gi"},
                                      "limits": {"nvidia.com/gpu": "8"}}
    workload = actor["kubernetes"]["workload"]
    assert workload["template"]["spec"]["volumes"] == [
        {"name": "data", "hostPath": {"path": "/data"}},
        {"name": "ckpt", "persistentVolumeClaim": {"claimName": "pvc-ppo-maniskill-7-actor-ckpt"}}]
    assert container["volumeMounts"] == [{"name": "data", "mountPath": "/data"},
                                         {"name": "ckpt", "mountPath": "/ckpt"}]
    assert workload["pvcStorageMap"] == {"pvc-ppo-maniskill-7-actor-ckpt": "oss-standard"}
    env_container = env["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    assert env_container["resources"] == {"requests": {"rlinf.io/franka": "1"}, "limits": {"rlinf.io/franka": "1"}}
    assert env_container["env"][0] == {"name": "RLARK_TASK_ROLE", "value": "Environment"}
    assert "pvcStorageMap" not in env["kubernetes"]["workload"]
    assert all("metadata" not in t["kubernetes"]["workload"]["template"] for t in spec["tasks"])


def test_launch_record_and_plan_are_json_annotations_the_views_read_back(good_mapping, nodes):
    draft, _ = load_draft(good_mapping)
    job = Job(render_job(draft, nodes))
    annotations = job.annotations
    assert json.loads(annotations[LAUNCH_RECORD_ANNOTATION]) == good_mapping["record"]
    assert job.launch_record["progressPattern"] == r"Global Step:\s*(\d+)/(\d+)"
    assert job.launch_record["startupMarker"] == "Starting the embodied runner"
    assert job.launch_record["stopCondition"] == "after global step 1000, or 12 h"
    plan = job.deployment_plan
    assert plan["totalNodes"] == 5 == job.total_nodes
    roles = {r["task"]: r for r in plan["roles"]}
    assert roles["actor"]["nodes"] == [{"name": "gpu-a1", "namespace": "rlark-gpu-a"}] and roles["actor"]["head"]
    assert [n["name"] for n in roles["environment"]["nodes"]] == ["robot-1", "robot-2"]
    assert [r["rankStart"] for r in plan["roles"]] == rank_starts(job.raw["spec"]["tasks"])[:3]
    assert job.display_name == "PPO ManiSkill 7"


def test_replicas_count_offline_nodes_and_no_record_means_no_annotation(good_mapping, nodes):
    mapping = set_path(set_path(good_mapping, "roles[1].selector", {"site": "a", "pool": "spare"}), "record", None)
    draft, _ = load_draft(mapping)
    manifest = render_job(draft, nodes)
    assert manifest["spec"]["tasks"][1]["kubernetes"]["workload"]["replicas"] == 1
    assert LAUNCH_RECORD_ANNOTATION not in manifest["metadata"]["annotations"]
    assert_valid_job(manifest)


def test_colliding_volume_names_stay_unique(good_mapping, nodes):
    mapping = set_path(good_mapping, "roles[0].mounts", [
        {"type": "host", "source": "/a", "target": "/x_y"}, {"type": "host", "source": "/b", "target": "/x-y"}])
    result = build_job(mapping, nodes)
    volumes = result.manifest["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["volumes"]
    assert [v["name"] for v in volumes] == ["x-y", "x-y-2"]
    assert_valid_job(result.manifest)


def test_draft_round_trips_through_yaml(good_mapping):
    draft, findings = load_draft(good_mapping)
    assert findings == []
    again, findings = load_draft(dump_draft(draft))
    assert findings == [] and again == draft
    assert "runScript: |" in dump_draft(draft)


def test_render_is_total_on_an_empty_draft(nodes):
    draft, _ = load_draft({})
    manifest = render_job(draft, nodes)
    assert manifest["spec"]["tasks"] == [] and manifest["kind"] == "Job"
