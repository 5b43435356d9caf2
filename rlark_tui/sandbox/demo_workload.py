"""The sandbox demo's run script: a tiny RLinf-like PPO run on the job's real Ray cluster.

Prints its run ID and code ref, RLinf's start-up banner, resolved config and progress rows, uses one Ray actor
per node, writes checkpoints in RLinf's layout under the output path, then stays alive (as a pod must).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
from datetime import datetime
from pathlib import Path

WIDTH = 120
GROUPS = ("ActorGroup", "RolloutGroup", "EnvGroup")
EXPERIMENT = "ppo-demo"


def _log(level: str, message: str) -> None:
    print(f"[{level} {datetime.now():%H:%M:%S} RLinf] {message}", flush=True)


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def _row(cells: list[str]) -> str:
    text = "│ " + " │ ".join(cells) + " │"
    return text if len(text) >= WIDTH else text[:-1] + " " * (WIDTH - len(text)) + "│"


def _rule(left: str, title: str, right: str) -> str:
    label = f" {title} " if title else ""
    side = (WIDTH - 2 - len(label)) // 2
    return left + "─" * side + label + "─" * (WIDTH - 2 - side - len(label)) + right


def metric_table(step: int, total: int, elapsed: float, step_time: float, metrics: dict[str, dict[str, float]]) -> str:
    """RLinf's per-step box table (print_metrics_table): title, progress row, time row, one section per
    metric category with three `name=value` cells per row."""
    done = int(40 * step / total)
    percent = 100.0 * step / total
    eta = step_time * (total - step)
    lines = [_rule("╭", "Metric Table", "╮"),
             f"│ Global Step: {step:>4}/{total} │ Progress: {'█' * done}{'░' * (40 - done)} │ {percent:5.1f}% │",
             _row([f"Elapsed: {_clock(elapsed)}", f"ETA: {_clock(eta)}", f"Step Time: {step_time:.2f}s"])]
    for section, values in metrics.items():
        lines.append(_rule("├", section, "┤"))
        cells = [f"{name}={value:.4f}" for name, value in values.items()]
        for start in range(0, len(cells), 3):
            lines.append(_row(cells[start:start + 3]))
    lines.append(_rule("╰", "", "╯"))
    return "\n".join(lines)


def resolved_config(args: argparse.Namespace, num_nodes: int) -> dict:
    ranks = list(range(num_nodes))
    placement = {group.removesuffix("Group").lower(): {"node_group": "node", "placement": str(rank)}
                 for rank, group in zip(ranks, GROUPS)}
    return {
        "cluster": {"num_nodes": num_nodes, "component_placement": placement,
                    "node_groups": [{"label": "node", "node_ranks": f"0-{num_nodes - 1}"}]},
        "runner": {"task_type": "embodied", "max_steps": args.steps, "save_interval": args.save_interval,
                   "resume_dir": None,
                   "logger": {"log_path": args.output, "project_name": "rlinf", "experiment_name": EXPERIMENT,
                              "logger_backends": ["tensorboard"]}},
        "algorithm": {"adv_type": "gae", "loss_type": "actor_critic", "normalize_advantages": True},
        "actor": {"group_name": "ActorGroup"}, "rollout": {"group_name": "RolloutGroup"},
        "env": {"group_name": "EnvGroup"},
        "run": {"run_id": args.run_id, "code_ref": args.code_ref},
    }


def write_checkpoint(output: Path, step: int, weights: list[float]) -> Path:
    """RLinf's FSDP checkpoint layout: `<log_path>/<experiment>/checkpoints/global_step_<N>/actor/` with
    `dcp_checkpoint/*.distcp` (+ `.metadata`) and `model_state_dict/full_weights.pt`."""
    actor = output / EXPERIMENT / "checkpoints" / f"global_step_{step}" / "actor"
    (actor / "dcp_checkpoint").mkdir(parents=True, exist_ok=True)
    (actor / "model_state_dict").mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"step": step, "weights": weights}).encode()
    (actor / "dcp_checkpoint" / "__0_0.distcp").write_bytes(payload)
    (actor / "dcp_checkpoint" / ".metadata").write_text(json.dumps(
        {"step": step, "sha256": hashlib.sha256(payload).hexdigest(), "keys": ["fsdp_checkpoint.model"]}))
    (actor / "model_state_dict" / "full_weights.pt").write_bytes(payload)
    return actor


def _event_writer(logdir: Path):
    """A tensorboardX writer on RLinf's `<log_path>/tensorboard/` (None without tensorboardX: no event files)."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        _log("WARNING", "tensorboardX is not installed; no TensorBoard event files are written.")
        return None
    return SummaryWriter(str(logdir), flush_secs=1)


def _write_scalars(writer, step: int, step_time: float, reward: float, loss: float, rng: random.Random) -> None:
    """RLinf's metric keys (rlinf-runtime.md §2.4) at TensorBoard step `step`, with noise so curves look real."""
    noisy = reward + rng.gauss(0, 0.08)
    for tag, value in (("rollout/rewards", noisy), ("env/return", noisy * 10 + rng.gauss(0, 0.5)),
                       ("env/success_once", min(1.0, max(0.0, noisy))),
                       ("train/actor/policy_loss", loss + rng.gauss(0, 0.02)),
                       ("train/critic/value_loss", 2 * loss + rng.gauss(0, 0.05)),
                       ("train/actor/grad_norm", loss * 3 + abs(rng.gauss(0, 0.1))),
                       ("time/step", step_time)):
        writer.add_scalar(tag, value, step)
    writer.flush()


def _wait_for_nodes(ray, num_nodes: int) -> list[dict]:
    while True:
        alive = [n for n in ray.nodes() if n.get("Alive")]
        if len(alive) >= num_nodes:
            return alive
        _log("WARNING", f"Waiting for {num_nodes} nodes to be ready, currently {len(alive)} nodes available.")
        time.sleep(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demo_workload")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--code-ref", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--save-interval", type=int, default=10)
    parser.add_argument("--step-seconds", type=float, default=1.0)
    parser.add_argument("--nodes", type=int, default=int(os.environ.get("RLARK_TOTAL_NODES", "1")))
    args = parser.parse_args(argv)

    print(f"Run ID: {args.run_id}", flush=True)
    print(f"Code ref: {args.code_ref}", flush=True)
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    ray.init(address="auto", namespace="RLinf", logging_level="WARNING", log_to_driver=False)
    nodes = _wait_for_nodes(ray, args.nodes)

    @ray.remote(num_cpus=0)
    class Worker:
        def probe(self) -> dict:
            return {"node_rank": int(os.environ.get("RLINF_NODE_RANK", "-1")), "pid": os.getpid()}

        def step(self, step: int) -> dict[str, float]:
            rng = random.Random(step * 7919 + os.getpid())
            return {"reward": math.tanh(step / 20) + rng.uniform(-0.05, 0.05), "loss": 1 / (1 + step) + rng.random() / 50}

    workers = []
    for index, node in enumerate(sorted(nodes, key=lambda n: n["NodeID"])):
        strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
        workers.append((node, Worker.options(scheduling_strategy=strategy, name=f"Worker:{index}").remote()))
    probes = ray.get([w.probe.remote() for _, w in workers])
    ranked = sorted(zip(probes, workers), key=lambda item: item[0]["node_rank"])[:args.nodes]

    _log("INFO", f"RLinf is running on a cluster with {args.nodes} node{'s' if args.nodes != 1 else ''} and "
                 f"0 accelerators. The nodes' details are: ")
    for probe, (node, _) in ranked:
        print(f"node_rank: {probe['node_rank']}\nray_id: {node['NodeID']}\nnode_ip: {node['NodeManagerAddress']}\n"
              f"num_cpus: {int(node['Resources'].get('CPU', 0))}\npython_interpreter_path: {sys.executable}\n"
              f"hardware_resources: []\n", flush=True)
    config = resolved_config(args, args.nodes)
    print(json.dumps(config, indent=2), flush=True)
    for probe, _ in ranked:
        group = GROUPS[min(probe["node_rank"], len(GROUPS) - 1)]
        _log("INFO", f"Using node placement with node ranks: [{probe['node_rank']}] for {group}.")

    output = Path(args.output)
    (output / "tensorboard").mkdir(parents=True, exist_ok=True)
    (output / "tensorboard" / "config.yaml").write_text(json.dumps(config, indent=2) + "\n")
    metrics_log = output / "metrics.log"
    metrics_log.write_text("")
    events = _event_writer(output / "tensorboard")
    started = time.monotonic()
    weights = [0.0] * 8
    for step in range(1, args.steps + 1):
        step_start = time.monotonic()
        results = ray.get([w.step.remote(step) for _, (_, w) in ranked])
        reward = sum(r["reward"] for r in results) / len(results)
        loss = sum(r["loss"] for r in results) / len(results)
        weights = [w + loss / 10 for w in weights]
        time.sleep(max(0.0, args.step_seconds - (time.monotonic() - step_start)))
        step_time = time.monotonic() - step_start
        table = metric_table(step, args.steps, time.monotonic() - started, step_time, {
            "Time": {"step": step_time, "generate_rollouts": step_time * 0.4, "actor_training": step_time * 0.3},
            "Environment": {"success_once": min(1.0, reward), "return": reward * 10},
            "Rollout": {"rewards": reward},
            "Training/Actor": {"actor/policy_loss": loss, "actor/grad_norm": loss * 3, "actor/lr": 1e-4},
        })
        print(table, flush=True)
        if events is not None:
            _write_scalars(events, step, step_time, reward, loss, random.Random(step))
        with metrics_log.open("a", encoding="utf-8") as fh:
            fh.write(table + "\n")
        if args.save_interval > 0 and (step % args.save_interval == 0 or step == args.steps):
            print(f"Saving checkpoint at step {step}.", flush=True)
            write_checkpoint(output, step, weights)
    _log("INFO", f"Training finished after {args.steps} steps; keeping the driver alive.")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
