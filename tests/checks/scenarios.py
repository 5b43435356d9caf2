"""Named evidence scenarios with the verdict each must get; shared by the table test and the evidence walk.

Each entry: name -> (evidence, expected results of rows 1–6, expected earliest failing stage).
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import timedelta

from rlark_tui.checks import MainContainer, OutputProbe, PodEvent, RayStatus

from . import fixtures as fx

LATE = fx.START + timedelta(minutes=11)
P, F, W = "pass", "fail", "pending"


def _job_with(mutate) -> dict:
    job = fx.job()
    mutate(job)
    return job


def _live_image_changed():
    job = _job_with(lambda j: j["spec"]["tasks"][1]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
                    .update(image="registry.example.com/rlinf@sha256:" + "ef" * 32))
    return fx.healthy(job=job, submitted_spec=fx.job()["spec"])


def _stopped():
    job = _job_with(lambda j: (j["spec"].update(stopped=True), j["status"].update(phase="Stopped")))
    spec = copy.deepcopy(job["spec"])
    return fx.healthy(job=job, submitted_spec=spec, pods=(), logs=(), ray=RayStatus(error="no head Pod"))


def _task_in_default():
    tasks = list(fx.tasks(fx.job()))
    tasks[2] = copy.deepcopy(tasks[2])
    tasks[2]["metadata"]["namespace"] = "default"
    pods = fx.pods()[:2]
    logs = tuple(log for log in fx.logs() if log.pod != "demo-ppo-env-0")
    return fx.healthy(tasks=tuple(tasks), pods=pods, logs=logs, ray=RayStatus(alive_nodes=2))


def _pod_on_wrong_node():
    pods = list(fx.pods())
    pods[1] = copy.deepcopy(pods[1])
    pods[1]["status"]["node"] = "gpu-a9"
    return fx.healthy(pods=tuple(pods))


def _no_pods_yet(now):
    return fx.healthy(pods=(), logs=(), containers=(), ray=RayStatus(error="connection refused"), now=now,
                      outputs=OutputProbe("/out/ppo-demo-1"))


def _pending_pod_image_pull():
    pods = list(fx.pods())
    pods[0] = copy.deepcopy(pods[0])
    pods[0]["status"]["phase"] = "Pending"
    logs = tuple(log for log in fx.logs() if log.pod != "demo-ppo-actor-0")
    events = {"demo-ppo-actor-0": (PodEvent("Warning", "Failed", "Failed to pull image \"x\": ErrImagePull"),)}
    return fx.healthy(pods=tuple(pods), logs=logs, events=events, ray=RayStatus(error="no head"))


def _wrong_rank():
    return fx.with_log(fx.healthy(), "demo-ppo-env-0", ["RLINF_NODE_RANK: 1"] + fx.worker_lines(2)[1:])


def _run_id_mismatch():
    return fx.with_log(fx.healthy(), "demo-ppo-actor-0", fx.head_lines(run_id="ppo-demo-0"))


def _config_sum_mismatch():
    record = dict(fx.record(), configRef="sha256:" + "0" * 64)
    return fx.healthy(launch_record=record)


def _num_nodes_mismatch():
    record = dict(fx.record(), expectedNumNodes=4)
    return fx.healthy(launch_record=record)


def _no_record():
    return fx.healthy(launch_record=None, outputs=None)


def _no_submitted_spec():
    return fx.healthy(submitted_spec=None, submitted_sha256=None, submitted_yaml_path=None)


def _dashboard_unreachable():
    return fx.healthy(ray=RayStatus(error="connection refused"))


def _two_of_three_alive(now):
    return fx.healthy(ray=RayStatus(alive_nodes=2), now=now)


def _restarted_during_run():
    containers = tuple(MainContainer(c.pod, 1 if c.pod == "demo-ppo-actor-0" else 0, "running", last_exit_code=137)
                       for c in fx.healthy().containers)
    return fx.healthy(containers=containers)


def _no_data_plane():
    return fx.healthy(containers=None, sources={"data-plane": "no data-plane context for rlark-gpu-a"})


def _data_plane_unreadable():
    containers = tuple(c for c in fx.healthy().containers if c.pod != "demo-ppo-actor-0")
    return fx.healthy(containers=containers, unread_containers=("demo-ppo-actor-0",),
                      sources={"data-plane": "cannot read Pod demo-ppo-actor-0 from cluster rlark-gpu-a: "
                                             "ServiceUnavailable (503)"})


def _reasoning_progress():
    lines = fx.head_lines(steps=0)
    bar = "Global Step:   0%|          | 0/10 [00:00<?, ?it/s]"
    lines += [bar, "Global Step:  10%|█         | 1/10 [00:05<00:45,  5.00s/it, step_time=5.0]"]
    return fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines)


def _reasoning_not_moved():
    lines = fx.head_lines(steps=0) + ["Global Step:   0%|          | 0/10 [00:00<?, ?it/s]"]
    return fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines)


def _custom_pattern():
    lines = fx.head_lines(steps=0) + ["epoch 1 done: loss=0.4"]
    record = dict(fx.record(), progressPattern=r"epoch \d+ done")
    return fx.with_log(fx.healthy(launch_record=record), "demo-ppo-actor-0", lines)


def _workload_traceback():
    lines = fx.head_lines() + ["Traceback (most recent call last):", "RuntimeError: boom"]
    return fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines)


def _tag_with_build_record():
    job = fx.job(image="registry.example.com/rlinf:v0.9")
    record = dict(fx.record(), buildRecord="ci.example.com/builds/812 (sha256:" + "ab" * 32 + ")")
    return fx.healthy(job=job, tasks=fx.tasks(job), submitted_spec=job["spec"], launch_record=record)


def _no_job():
    return fx.healthy(job=None, tasks=(), pods=(), logs=(), submitted_spec=None, ray=None, outputs=None)


def _config_not_printed():
    lines = [line for line in fx.head_lines() if not line.startswith((" ", "{", "}"))]
    return fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines)


def _secret_in_log():
    lines = fx.head_lines() + ["export WANDB_API_KEY=abcd1234secret"]
    return fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines)


def _extra_pod():
    pods = fx.pods() + (json.loads(json.dumps(fx.pods()[1]).replace("uid-rollout", "uid-rollout-b")
                                   .replace("rollout-0", "rollout-1")),)
    return fx.healthy(pods=pods)


SCENARIOS = {
    "healthy": (fx.healthy(), [P, P, P, P, P, P], None),
    "no job": (_no_job(), [F, F, F, W, W, F], "job"),
    "live image differs from submitted": (_live_image_changed(), [F, P, P, P, P, F], "job"),
    "stopped": (_stopped(), [F, F, W, W, W, F], "job"),
    "no submitted spec": (_no_submitted_spec(), [W, P, P, P, P, W], None),
    "task in default": (_task_in_default(), [P, F, W, P, P, F], "pods"),
    "pod on a wrong node": (_pod_on_wrong_node(), [P, F, P, P, P, F], "pods"),
    "extra pod": (_extra_pod(), [P, F, W, P, P, F], "pods"),
    "no pods yet": (_no_pods_yet(fx.NOW), [P, W, W, W, W, W], None),
    "no pods after max wait": (_no_pods_yet(LATE), [P, F, F, F, F, F], "pods"),
    "image pull": (_pending_pod_image_pull(), [P, W, F, W, W, F], "pods"),
    "wrong rank": (_wrong_rank(), [P, P, F, P, P, F], "ray"),
    "run id mismatch": (_run_id_mismatch(), [P, P, P, F, P, F], "app"),
    "config checksum mismatch": (_config_sum_mismatch(), [P, P, P, F, P, F], "app"),
    "num_nodes mismatch": (_num_nodes_mismatch(), [P, W, W, F, P, F], "app"),
    "no launch record": (_no_record(), [P, P, P, W, W, W], None),
    "dashboard unreachable": (_dashboard_unreachable(), [P, P, P, P, P, P], None),
    "2 of 3 alive": (_two_of_three_alive(fx.NOW), [P, P, W, P, P, W], None),
    "2 of 3 alive after max wait": (_two_of_three_alive(LATE), [P, P, F, P, P, F], "ray"),
    "restarted during the run": (_restarted_during_run(), [P, F, P, P, P, F], "app"),
    "no data plane": (_no_data_plane(), [P, P, P, P, P, P], None),
    "data plane unreadable": (_data_plane_unreadable(), [P, W, P, P, P, W], None),
    "reasoning progress": (_reasoning_progress(), [P, P, P, P, P, P], None),
    "reasoning bar not moved": (_reasoning_not_moved(), [P, P, P, P, W, W], None),
    "custom progress pattern": (_custom_pattern(), [P, P, P, P, P, P], None),
    "workload traceback": (_workload_traceback(), [P, P, P, P, F, F], "progress"),
    "config not printed": (_config_not_printed(), [P, P, P, P, P, P], None),
    "secret in a log": (_secret_in_log(), [P, P, P, P, P, P], None),
    "tag image with a build record": (_tag_with_build_record(), [P, P, P, P, P, P], None),
}


def all_evidence():
    """Every scenario's evidence, the fault tests' included, for walks over all reports."""
    return {name: evidence for name, (evidence, _, _) in SCENARIOS.items()}


def late(evidence):
    return replace(evidence, now=LATE)
