"""Named evidence scenarios with the verdict each must get; shared by the table test and the evidence walk.

Each entry: name -> (evidence, expected results of rows 1–6, expected earliest failing stage).
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import timedelta

from rlark_tui.checks import OutputFile, OutputProbe, PodEvent, RayStatus

from . import fixtures as fx

LATE = fx.START + timedelta(minutes=11)


def late(evidence):
    return replace(evidence, now=LATE)
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
    containers = tuple(replace(c, restart_count=1, last_exit_code=137) if c.pod == "demo-ppo-actor-0" else c
                       for c in fx.healthy().containers)
    return fx.healthy(containers=containers)


def _no_data_plane():
    return fx.healthy(containers=None, sources={"data-plane": "no data-plane context for rlark-gpu-a"})


def _data_plane_unreadable():
    containers = tuple(c for c in fx.healthy().containers if c.pod != "demo-ppo-actor-0")
    return fx.healthy(containers=containers, unread_containers=("demo-ppo-actor-0",),
                      sources={"data-plane": "cannot read Pod demo-ppo-actor-0 from cluster rlark-gpu-a: "
                                             "ServiceUnavailable (503)"})


REASONING = dict(fx.record(), progressPattern=r"Global Step:\s+(\d+)%\|")


def _reasoning_progress():
    lines = fx.head_lines(steps=0)
    bar = "Global Step:   0%|          | 0/10 [00:00<?, ?it/s]"
    lines += [bar, "Global Step:  10%|█         | 1/10 [00:05<00:45,  5.00s/it, step_time=5.0]"]
    return fx.with_log(fx.healthy(launch_record=REASONING), "demo-ppo-actor-0", lines)


def _reasoning_not_moved():
    lines = fx.head_lines(steps=0) + ["Global Step:   0%|          | 0/10 [00:00<?, ?it/s]"]
    return fx.with_log(fx.healthy(launch_record=REASONING), "demo-ppo-actor-0", lines)


def _record_with(**changes):
    return fx.healthy(launch_record=dict(fx.record(), **changes))


def _head_with(extra: list[str], **record):
    evidence = _record_with(**record) if record else fx.healthy()
    return fx.with_log(evidence, "demo-ppo-actor-0", fx.head_lines() + extra)


def _tag_image(build_record: str | None, pulled: str = fx.DIGEST):
    job = fx.job(image="registry.example.com/rlinf:v0.9")
    record = dict(fx.record(), **({"buildRecord": build_record} if build_record else {}))
    containers = tuple(replace(c, image_id=pulled) for c in fx.healthy().containers)
    return fx.healthy(job=job, tasks=fx.tasks(job), submitted_spec=job["spec"], launch_record=record,
                      containers=containers)


def _pulled(image_id: str):
    return fx.healthy(containers=tuple(replace(c, image_id=image_id) for c in fx.healthy().containers))


def _oom_killed():
    containers = tuple(replace(c, restart_count=2, state="waiting", reason="CrashLoopBackOff", last_exit_code=137,
                               last_reason="OOMKilled") if c.pod == "demo-ppo-rollout-0" else c
                       for c in fx.healthy().containers)
    events = {"demo-ppo-rollout-0": (PodEvent("Warning", "BackOff", "Back-off restarting failed container main"),)}
    return fx.healthy(containers=containers, events=events)


def _event_on_running(reason: str, message: str):
    return fx.healthy(events={"demo-ppo-env-0": (PodEvent("Warning", reason, message),)})


def _env_override():
    job = _job_with(lambda j: j["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
                    ["env"].append({"name": "RUNNER__MAX_STEPS", "value": "20"}))
    return fx.healthy(job=job, submitted_spec=job["spec"])


def _outputs(paths, location="/out/ppo-demo-1", **record):
    when = fx.START + timedelta(seconds=90)
    probe = OutputProbe(location, tuple(OutputFile(p, 100, when, "e2" * 32) for p in paths),
                        source="in Pod demo-ppo-actor-0 (exec)")
    return fx.healthy(outputs=probe, **({"launch_record": dict(fx.record(), **record)} if record else {}))


def _custom_pattern():
    lines = fx.head_lines(steps=0) + ["epoch 1 done: loss=0.4"]
    record = dict(fx.record(), progressPattern=r"epoch \d+ done")
    return fx.with_log(fx.healthy(launch_record=record), "demo-ppo-actor-0", lines)


def _workload_traceback():
    lines = fx.head_lines() + ["Traceback (most recent call last):", "RuntimeError: boom"]
    return fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines)


def _no_job():
    return fx.healthy(job=None, tasks=(), pods=(), logs=(), submitted_spec=None, ray=None, outputs=None)


def _config_not_printed():
    lines = [line for line in fx.head_lines() if not line.startswith((" ", "{", "}"))]
    return fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines)


def _secret_in_log():
    lines = fx.head_lines() + ["export WANDB_API_KEY=abcd1234secret"]
    return fx.with_log(fx.healthy(), "demo-ppo-actor-0", lines)


RESUME_DIR = "/out/ppo-demo-1/ppo-demo/checkpoints/global_step_2"


def _tables(first: int, last: int) -> list[str]:
    return [line for step in range(first, last + 1) for line in fx.metric_table(
        step, 10, 1.2 * (step - 2), {"rollout/rewards": step / 10}, start_step=2).splitlines()]


def _resumed(extra: list[str], resume_dir: str = RESUME_DIR, **changes):
    """A Job whose Header run command passes runner.resume_dir, its log the start-up then `extra`."""
    job = _job_with(lambda j: j["spec"]["tasks"][0].update(
        runScript=j["spec"]["tasks"][0]["runScript"] + f" runner.resume_dir={resume_dir}"))
    evidence = fx.healthy(job=job, tasks=fx.tasks(job), submitted_spec=copy.deepcopy(job["spec"]), **changes)
    return fx.with_log(evidence, "demo-ppo-actor-0", fx.head_lines(steps=0) + extra)


EMBODIED_RESUME = f"[INFO 12:00:42 RLinf] Resuming training from checkpoint directory {RESUME_DIR}."
REASONING_RESUME = ["Size of train dataloader: 10", f"Load from checkpoint folder: {RESUME_DIR}",
                    "Setting global step to 2"]


def _extra_pod():
    pods = fx.pods() + (json.loads(json.dumps(fx.pods()[1]).replace("uid-rollout", "uid-rollout-b")
                                   .replace("rollout-0", "rollout-1")),)
    return fx.healthy(pods=pods)


SCENARIOS = {
    "healthy": (fx.healthy(), [P, P, P, P, P, P], None),
    "no job": (_no_job(), [F, F, F, W, W, F], "job"),
    "live image differs from submitted": (_live_image_changed(), [F, P, P, F, P, F], "job"),
    "stopped": (_stopped(), [F, F, W, W, W, F], "job"),
    "no submitted spec": (_no_submitted_spec(), [W, P, P, P, P, W], None),
    "task in default": (_task_in_default(), [P, F, W, F, P, F], "pods"),
    "pod on a wrong node": (_pod_on_wrong_node(), [P, F, P, P, P, F], "pods"),
    "extra pod": (_extra_pod(), [P, F, W, F, P, F], "pods"),
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
    "no data plane": (_no_data_plane(), [P, P, P, W, P, W], None),
    "data plane unreadable": (_data_plane_unreadable(), [P, W, P, W, P, W], None),
    "reasoning progress": (_reasoning_progress(), [P, P, P, P, P, P], None),
    "reasoning bar not moved": (_reasoning_not_moved(), [P, P, P, P, W, W], None),
    "custom progress pattern": (_custom_pattern(), [P, P, P, P, P, P], None),
    "workload traceback": (_workload_traceback(), [P, P, P, P, F, F], "progress"),
    "config not printed": (_config_not_printed(), [P, P, P, P, P, P], None),
    "secret in a log": (_secret_in_log(), [P, P, P, P, P, P], None),
    "tag image with a build record": (_tag_image("ci.example.com/builds/812 (sha256:" + "ab" * 32 + ")"),
                                      [P, P, P, P, P, P], None),
    "tag image without a build record": (_tag_image(None), [P, P, P, W, P, W], None),
    "tag image, build record names another digest": (_tag_image("sha256:" + "cd" * 32), [P, P, P, F, P, F], "app"),
    "digest image, another digest pulled": (_pulled("registry.example.com/rlinf@sha256:" + "99" * 32),
                                            [P, P, P, F, P, F], "app"),
    "short code SHA in the record": (_record_with(codeRef=fx.CODE_REF[:7]), [P, P, P, W, P, W], None),
    "tag resolved and recorded as code ref": (_record_with(codeRef="v0.9@" + fx.CODE_REF), [P] * 6, None),
    "application reports a short SHA": (fx.with_log(fx.healthy(), "demo-ppo-actor-0",
                                                    fx.head_lines(code_ref=fx.CODE_REF[:8])),
                                        [P, P, P, W, P, W], None),
    "data version matches": (_head_with(["data_version: libero-2026.11"], dataVersion="libero-2026.11"),
                             [P] * 6, None),
    "data version differs": (_head_with(["data_version: libero-2026.10"], dataVersion="libero-2026.11"),
                             [P, P, P, F, P, F], "app"),
    "data version not printed yet": (_record_with(dataVersion="libero-2026.11"), [P, P, P, W, P, W], None),
    "runtime versions match": (_head_with(["torch==2.5.1", "vllm version: 0.8.5"],
                                          runtimeVersions={"torch": "2.5.1", "vllm": "0.8.5"}), [P] * 6, None),
    "runtime version differs": (_head_with(["torch==2.4.0"], runtimeVersions={"torch": "2.5.1"}),
                                [P, P, P, F, P, F], "app"),
    "output prefix differs from the application's": (_record_with(outputPath="/out/ppo-demo-1/other"),
                                                      [P, P, P, F, W, F], "app"),
    "application reports another node count": (fx.with_log(fx.healthy(), "demo-ppo-actor-0", [
        line.replace("with 3 nodes", "with 2 nodes") for line in fx.head_lines()]), [P, P, P, F, P, F], "app"),
    "env var overrides a config key": (_env_override(), [P] * 6, None),
    "no agreed progress signal": (_record_with(progressPattern=None), [P, P, P, P, W, W], None),
    "outputs of another run's prefix": (_outputs(["/out/ppo-demo-10/ckpt.pt"]), [P, P, P, P, W, W], None),
    "outputs under the run's prefix": (_outputs(["/out/ppo-demo-1/ckpt.pt"]), [P] * 6, None),
    "prefix does not name the run": (_outputs(["/out/shared/ckpt.pt"], location="/out/shared",
                                              outputPath="/out/shared"), [P, P, P, F, W, F], "app"),
    "startup marker seen": (_head_with(["workload started: ppo"], startupMarker=r"workload started"),
                            [P] * 6, None),
    "startup marker not printed yet": (_record_with(startupMarker=r"workload started"), [P, P, W, P, P, W], None),
    "startup marker not printed after max wait": (late(_record_with(startupMarker=r"workload started")),
                                                  [P, P, F, P, P, F], "app"),
    "OOMKilled and in back-off": (_oom_killed(), [P, F, P, P, P, F], "ray"),
    "FailedMount on a Pod": (_event_on_running("FailedMount", "MountVolume.SetUp failed for volume \"out\""),
                             [P, F, P, P, P, F], "pods"),
    "Unhealthy Pod": (_event_on_running("Unhealthy", "Liveness probe failed"), [P, F, P, P, P, F], "pods"),
    "resumed, embodied": (_resumed([EMBODIED_RESUME] + _tables(3, 4)), [P] * 6, None),
    "resumed, reasoning": (_resumed(REASONING_RESUME + [
        "Global Step:  20%|██        | 2/10 [00:00<?, ?it/s]", "Global Step:  30%|███       | 3/10 "
        "[00:05<00:35,  5.00s/it, step_time=5.0]"], launch_record=REASONING), [P] * 6, None),
    "resume dir set, run started from scratch": (_resumed(_tables(1, 2)), [P, P, P, P, F, F], "progress"),
    "resumed at another step": (_resumed(REASONING_RESUME[:2] + ["Setting global step to 3"] + _tables(4, 4)),
                                [P, P, P, P, F, F], "progress"),
    "resume line, then step 1": (_resumed([EMBODIED_RESUME] + _tables(1, 1)), [P, P, P, P, F, F], "progress"),
    "resume line, no progress yet": (_resumed([EMBODIED_RESUME]), [P, P, P, P, W, W], None),
    "resume dir not a global_step_N": (_resumed(_tables(3, 3), resume_dir="/out/ppo-demo-1/latest"),
                                       [P, P, P, P, F, F], "progress"),
}


NO_HAND_OVER = {"healthy, no decision or recorder": (fx.healthy(), [P, P, P, P, P, W], None)}
"""Scenarios judged without a hand-over (the others get fx.DECIDED)."""


def all_evidence():
    """Every scenario's evidence, the fault tests' included, for walks over all reports."""
    return {name: evidence for name, (evidence, _, _) in SCENARIOS.items()}



