"""Placement by hardware as the console's ResourcePlacementPicker computes it (RLark 8803065): the choices by GPU or
device model with slots free/total and Nodes available/total, the hostname selector it writes, the replicas, and
why a choice cannot fit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rlark_tui.jobspec.clone import draft_of
from rlark_tui.jobspec.draft import JobDraft, RoleDraft, dump_draft, load_draft
from rlark_tui.jobspec.render import render_job
from rlark_tui.jobspec.validate import validate
from rlark_tui.model.objects import Node
from rlark_tui.model.placement import COMPUTE, DEVICE, GPU, hardware_choices

from .jobschema import assert_valid_job

H100 = "NVIDIA H100 80GB HBM3"
IMAGE = "registry.example.com/rlinf@sha256:" + "0123456789abcdef" * 4


def node(name, cluster="rlark-gpu-a", allocatable=None, used=None, phase="Online", cordoned=False, labels=None,
         annotations=None):
    return {"metadata": {"name": name, "namespace": cluster, "annotations": annotations or {},
                         "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"unschedulable": cordoned},
            "status": {"phase": phase, "allocatable": allocatable or {}, "capacity": allocatable or {},
                       "used": used or {}}}


def h100(name, used=0, **kwargs):
    return node(name, allocatable={"cpu": "64", "nvidia.com/gpu": "8"}, used={"nvidia.com/gpu": str(used)},
                annotations={"rlark.io/gpu-model": H100}, **kwargs)


NODES = [
    h100("gpu-a1", used=6), h100("gpu-a2", used=1), h100("gpu-a3"), h100("gpu-a4", phase="Offline"),
    h100("gpu-a5", cordoned=True),
    node("a100-1", allocatable={"nvidia.com/gpu": "4"}, labels={"rlark.io/gpu-model": "NVIDIA A100"}),
    node("cam-1", allocatable={"rlinf.io/device-camera": "2"}, used={"rlinf.io/device-camera": "1"},
         annotations={"rlark.io/device-model": "RealSense D435"}),
    node("cpu-1", allocatable={"cpu": "16"}),
    node("gpu-b1", cluster="rlark-gpu-b", allocatable={"nvidia.com/gpu": "8"},
         annotations={"rlark.io/gpu-model": H100}),
]


def test_choices_group_the_cluster_nodes_by_model_with_free_slots_and_available_nodes():
    choices = hardware_choices([Node(n) for n in NODES], "rlark-gpu-a")
    shown = [(c.kind, c.model, c.free, c.total, c.nodes_available, len(c.members)) for c in choices]
    assert shown == [
        (GPU, "NVIDIA A100", 4, 4, 1, 1),  # the model from the label when there is no annotation
        (GPU, H100, 2 + 7 + 8, 40, 3, 5),  # Offline and cordoned Nodes count in the totals only
        (DEVICE, "RealSense D435", 1, 2, 1, 1),
        (COMPUTE, "CPU", 1, 1, 1, 1),
    ]
    assert [m.node.name for m in choices[1].eligible(4)] == ["gpu-a2", "gpu-a3"]


def test_nodes_show_a_gpu_model_set_as_a_label_as_the_picker_offers_it():
    assert Node(NODES[5]).gpu_model == "NVIDIA A100"  # :nodes, rlark get nodes, rlark get clusters
    assert Node(NODES[0]).gpu_model == H100


def placed_draft(**role) -> JobDraft:
    actor = RoleDraft(name="Actor", cluster="rlark-gpu-a", image=IMAGE, **role)
    return JobDraft(name="ppo", header="Actor", roles=(actor,), run_script="python train.py")


def test_automatic_placement_lists_every_eligible_node_and_runs_the_workers_asked():
    draft = placed_draft(hardware=H100, workers=2, gpu=4)
    errors = [f.field for f in validate(draft, NODES) if f.level == "error"]
    assert errors == ["roles[0].workers"]  # the Header role's 2 workers: it fits otherwise
    manifest = render_job(replace(draft, header=""), NODES)
    task = manifest["spec"]["tasks"][0]
    assert task["nodeSelector"] == {"kubernetes.io/hostname": "gpu-a2,gpu-a3"}
    assert task["kubernetes"]["workload"]["replicas"] == 2
    assert task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}
    assert_valid_job(manifest)


def test_picked_nodes_make_the_worker_count_and_a_draft_keeps_them():
    draft = replace(placed_draft(hardware=H100, nodes=("gpu-a3", "gpu-a2"), gpu=1), header="")
    manifest = render_job(draft, NODES)
    task = manifest["spec"]["tasks"][0]
    assert task["nodeSelector"] == {"kubernetes.io/hostname": "gpu-a3,gpu-a2"}
    assert task["kubernetes"]["workload"]["replicas"] == 2
    assert_valid_job(manifest)
    assert load_draft(dump_draft(draft))[0] == draft
    assert "nodes:\n  - gpu-a3\n  - gpu-a2" in dump_draft(draft)


@pytest.mark.parametrize("role, field, message", [
    ({"hardware": "NVIDIA B200", "workers": 1}, "roles[0].hardware",
     f"no Node in rlark-gpu-a has 'NVIDIA B200' (offered: NVIDIA A100, {H100}, RealSense D435, CPU)"),
    ({"hardware": H100, "workers": 0}, "roles[0].workers", "at least 1 worker"),
    ({"hardware": H100, "workers": 1, "gpu": 9}, "roles[0].hardware",
     f"no schedulable Node of {H100} has 9 GPUs free (most on one Node: 8)"),
    ({"hardware": H100, "workers": 3, "gpu": 7}, "roles[0].workers",
     f"3 workers × 7 GPUs = 21, but {H100} has only 17 free"),
    ({"hardware": H100, "workers": 3, "gpu": 4}, "roles[0].workers",
     f"3 workers need 3 Nodes (the platform puts at most one worker of a role on a Node), but only 2 Nodes of "
     f"{H100} have 4 GPUs free"),
    ({"hardware": H100, "nodes": ("gpu-a1",), "gpu": 4}, "roles[0].nodes", "gpu-a1 has 2 GPUs free; a worker asks 4"),
    ({"hardware": H100, "nodes": ("gpu-a4",)}, "roles[0].nodes", "gpu-a4 is Offline: its worker would stay Pending"),
    ({"hardware": H100, "nodes": ("gpu-a5",)}, "roles[0].nodes", "gpu-a5 is cordoned: its worker would stay Pending"),
    ({"hardware": H100, "nodes": ("a100-1",)}, "roles[0].nodes", f"a100-1 is NVIDIA A100, not {H100}"),
    ({"hardware": H100, "nodes": ("gpu-b1",)}, "roles[0].nodes", "no Node 'gpu-b1' in rlark-gpu-a"),
    ({"hardware": H100, "nodes": ("gpu-a3",), "workers": 2}, "roles[0].workers",
     "the worker count follows the picked Nodes (1); leave workers out or pick 2 Nodes"),
    ({"hardware": H100, "workers": 1, "selector": {"pool": "x"}}, "roles[0].selector",
     "give a selector or a hardware placement, not both: the placement writes the nodeSelector (the hostnames "
     "of its Nodes)"),
    ({"hardware": H100, "nodes": ("gpu-a2", "gpu-a3")}, "roles[0].nodes",
     "the Header role has 2 workers; it must have exactly 1 (every Header replica runs its own Ray head)"),
])
def test_a_placement_that_cannot_fit_is_refused_with_why(role, field, message):
    findings = validate(placed_draft(**role), NODES)
    assert (field, message) in [(f.field, f.message) for f in findings if f.level == "error"], findings


@pytest.mark.parametrize("role", [{"hardware": H100, "workers": 2, "gpu": 4},
                                  {"hardware": H100, "nodes": ("gpu-a3", "gpu-a2"), "gpu": 1}])
def test_edit_and_clone_get_the_placement_back_and_render_the_same_job(role):
    draft = replace(placed_draft(**role), header="")
    manifest = render_job(draft, NODES)
    recovered = draft_of(manifest)
    assert recovered.notes == ("this Job has no launch record from rlark: fill in the run check's record again",)
    assert recovered.draft.roles == tuple(replace(r, role="Actor") for r in draft.roles)
    assert render_job(recovered.draft, NODES)["spec"] == manifest["spec"]


def test_a_console_job_on_picked_nodes_edits_as_picked_nodes():
    manifest = render_job(replace(placed_draft(hardware=H100, nodes=("gpu-a3", "gpu-a2")), header=""), NODES)
    del manifest["metadata"]["annotations"]  # as the console writes it: no deployment plan
    role = draft_of(manifest).draft.roles[0]
    assert (role.nodes, dict(role.selector), role.hardware) == (("gpu-a3", "gpu-a2"), {}, "")


@pytest.mark.parametrize("rollout, field, message", [
    ({"workers": 2}, "roles[1].workers",
     "this draft's other roles take GPUs on gpu-a3: 1 of the 2 Nodes keeps 4 GPUs free for 2 workers"),
    ({"nodes": ("gpu-a3",)}, "roles[1].nodes",
     "Node gpu-a3 has 8 GPUs free; this draft asks 10 there (all roles on that Node)"),
])
def test_other_roles_of_the_draft_on_the_same_nodes_warn(rollout, field, message):
    actor = RoleDraft(name="Actor", cluster="rlark-gpu-a", image=IMAGE, gpu=6,
                      selector={"kubernetes.io/hostname": "gpu-a3"})
    placed = RoleDraft(name="Rollout", cluster="rlark-gpu-a", image=IMAGE, gpu=4, hardware=H100, **rollout)
    draft = JobDraft(name="ppo", header="Actor", roles=(actor, placed), run_script="python train.py")
    findings = validate(draft, NODES)
    assert not [f for f in findings if f.level == "error"], findings
    assert [(f.field, f.message) for f in findings if f.field == field] == [(field, message)]


def test_a_model_no_node_has_names_the_first_models_offered_and_counts_the_rest():
    # issue 33: the finding listed every model the cluster's Nodes name, one line of 10,000 models in
    # `rlark draft render` and `submit -f` (and in the wizard, cut at 1,000 characters)
    from rlark_tui.jobspec.validate import OFFERED_SHOWN

    many = [node(f"g{n:05}", allocatable={"nvidia.com/gpu": "8"}, annotations={"rlark.io/gpu-model": f"GPU-{n:05}"})
            for n in range(500)]
    (message,) = [f.message for f in validate(placed_draft(hardware="NVIDIA B200", workers=1), many)
                  if f.field == "roles[0].hardware"]
    shown = ", ".join(f"GPU-{n:05}" for n in range(OFFERED_SHOWN))
    assert message == f"no Node in rlark-gpu-a has 'NVIDIA B200' (offered: {shown} and {500 - OFFERED_SHOWN:,} more)"
