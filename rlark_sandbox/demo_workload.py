"""The sandbox demo's run script: a tiny RLinf-like PPO run on the job's real Ray cluster.

Prints its run ID and code ref, RLinf's start-up banner, resolved config and progress: the embodied runners'
metric table after every step, or with `--reasoning` the reasoning runners' `Global Step` tqdm bar on stderr
(redrawn with `\\r`, no newline until it closes). Uses one Ray actor per node (`$RLARK_DEMO_RANKS` of them
round the nodes when set), named as RLinf names its workers (`ActorGroup:<rank>`, namespace RLinf), writes
checkpoints in RLinf's layout under the output path, then stays alive (as a pod must).

Faults, off by default, set by the Job's env `RLARK_DEMO_FAULT` (from the second step on; a rank runs on a
worker node with that node's env, so a worker role carries it too):
- `hang:<rank>`: that rank never reaches the collective (it sits in `next_batch`), the others wait in `allreduce`;
- `sigsegv:<rank>`: that rank is killed by SIGSEGV; the driver prints the crash chain and exits 1;
- `cudaoom:<rank>`: that rank raises what PyTorch raises on a CUDA OOM, as PyTorch prints it
  (`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of ...`,
  without torch); the driver prints RLinf's crash chain and exits 1;
- `hostoom:<rank>`: that rank allocates and touches memory (up to HOSTOOM_CAP) until its Pod passes the
  container's memory limit and is OOMKilled; Ray loses the node, the driver prints the crash chain and exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import random
import signal
import sys
import threading
import time
import traceback
from datetime import datetime
from pathlib import Path

WIDTH = 120
GROUPS = ("ActorGroup", "RolloutGroup", "EnvGroup")
EXPERIMENT = "ppo-demo"


def _log(level: str, message: str) -> None:
    print(f"[{level} {datetime.now():%H:%M:%S} RLinf] {message}", flush=True)


def _clock(seconds: float) -> str:
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


SECTIONS = ("Time", "Environment", "Rollout", "Evaluation", "Replay Buffer", "Training/Actor", "Training/Critic",
            "Training/Other")
"""The table's sections in RLinf's order (rlinf-runtime.md §2.4)."""
_CATEGORY = {"time": "Time", "env": "Environment", "rollout": "Rollout", "eval": "Evaluation",
             "replay_buffer": "Replay Buffer"}
CELL_WIDTHS = (39, 39, 38)
"""Three cells per row: 116 columns between the four `│`, the two extra columns going to the first two cells."""


def section_of(key: str) -> tuple[str, str] | None:
    """(section, name shown) of a metric key: the category is dropped from the name; `train/` keys go to
    Training/Actor (`actor/...`), Training/Critic (`critic/...`), Replay Buffer (`replay_buffer/` dropped) or
    Training/Other. A key without a known category is not shown."""
    category, slash, name = key.partition("/")
    if not slash:
        return None
    if category in _CATEGORY:
        return _CATEGORY[category], name
    if category != "train":
        return None
    for prefix, section in (("actor/", "Training/Actor"), ("critic/", "Training/Critic")):
        if name.startswith(prefix):
            return section, name
    if name.startswith("replay_buffer/"):
        return "Replay Buffer", name.replace("replay_buffer/", "")
    return "Training/Other", name


def format_value(value: object) -> str:
    """A cell's number as RLinf writes it: floats by size (`.2e` tiny or huge, `.4f` small, `.1f` large, else
    `.3f`), anything else with str()."""
    if not isinstance(value, float):
        return str(value)
    size = abs(value)
    if size < 0.001 and value != 0:
        return f"{value:.2e}"
    if size < 0.01:
        return f"{value:.4f}"
    if size > 10000:
        return f"{value:.2e}"
    if size > 100:
        return f"{value:.1f}"
    return f"{value:.3f}"


def _fit(text: str, width: int) -> str:
    """Padded to `width`, or cut to it with a closing `…`."""
    if len(text) <= width:
        return text.ljust(width)
    return text[:width] if width <= 1 else text[:width - 1] + "…"


def _title(title: str) -> str:
    label = f" {title} "
    left = (WIDTH - 2 - len(label)) // 2
    return "├" + "─" * left + label + "─" * (WIDTH - 2 - len(label) - left) + "┤"


def metric_table(step: int, total: int, elapsed: float, metrics: dict[str, object], start_step: int = 0) -> str:
    """The text RLinf's `print_metrics_table` prints after completed step `step` (1-based) of `total`, `elapsed`
    seconds after the run (resumed at `start_step`) began: an empty line, a plain top border, the `Metric Table`
    title, the Global Step and time rows, per non-empty section its title, a blank row, rows of three cells and
    another blank row, the bottom border and an empty line. `print()` it as RLinf does."""
    progress = step / total * 100
    done = step - start_step
    per_step = elapsed / done if done > 0 else 0.0
    filled = int(40 * progress / 100)
    blank = "│" + " " * (WIDTH - 2) + "│"
    rows = ["", "╭" + "─" * (WIDTH - 2) + "╮", _title("Metric Table"),
            _fit(f"│ Global Step: {step:4d}/{total} │ Progress: {'█' * filled}{'░' * (40 - filled)} │ "
                 f"{progress:5.1f}%", WIDTH - 2) + " │",
            _fit(f"│ Elapsed: {_clock(elapsed)} │ ETA: {_clock(per_step * (total - step))} │ "
                 f"Step Time: {per_step:.3f}s", WIDTH - 2) + " │"]
    grouped: dict[str, dict[str, object]] = {section: {} for section in SECTIONS}
    for key, value in metrics.items():
        placed = section_of(key)
        if placed is not None:
            grouped[placed[0]][placed[1]] = value
    for section, values in grouped.items():
        if not values:
            continue
        rows += [_title(section), blank]
        cells = [f"{name}={format_value(value)}" for name, value in sorted(values.items())]
        for start in range(0, len(cells), 3):
            row = (cells[start:start + 3] + ["", ""])[:3]
            rows.append("│" + "│".join(_fit(cell, width) for cell, width in zip(row, CELL_WIDTHS)) + "│")
        rows.append(blank)
    rows += ["╰" + "─" * (WIDTH - 2) + "╯", ""]
    return "\n".join(rows)


def tqdm_bar(steps: int, initial: int = 0, stream=None):
    """The reasoning runners' progress bar (rlinf-runtime.md §2.4): `Global Step`, `total=max_steps`,
    `ncols=1650`, on stderr; `set_postfix(metrics, refresh=False)` then `update(1)` per step, and no newline
    until it is closed."""
    from tqdm import tqdm
    return tqdm(initial=initial, total=steps, desc="Global Step", ncols=1650, file=stream or sys.stderr)


def resolved_config(args: argparse.Namespace, num_nodes: int) -> dict:
    ranks = list(range(num_nodes))
    placement = {group.removesuffix("Group").lower(): {"node_group": "node", "placement": str(rank)}
                 for rank, group in zip(ranks, GROUPS)}
    return {
        "cluster": {"num_nodes": num_nodes, "component_placement": placement,
                    "node_groups": [{"label": "node", "node_ranks": f"0-{num_nodes - 1}"}]},
        "runner": {"task_type": "embodied", "max_steps": args.steps, "save_interval": args.save_interval,
                   "resume_dir": args.resume_dir,
                   "logger": {"log_path": args.output, "project_name": "rlinf", "experiment_name": EXPERIMENT,
                              "logger_backends": ["tensorboard"]}},
        "algorithm": {"adv_type": "gae", "loss_type": "actor_critic", "normalize_advantages": True},
        "actor": {"group_name": "ActorGroup"}, "rollout": {"group_name": "RolloutGroup"},
        "env": {"group_name": "EnvGroup"},
        "run": {"run_id": args.run_id, "code_ref": args.code_ref},
    }


STATE_BYTES = 4096
"""The optimizer-and-RNG state each shard carries besides the weights, so a checkpoint is a few KB as RLinf's
are big: enough for sizes to show."""


def write_checkpoint(output: Path, step: int, weights: list[float]) -> Path:
    """RLinf's FSDP checkpoint layout: `<log_path>/<experiment>/checkpoints/global_step_<N>/actor/` with
    `dcp_checkpoint/*.distcp` (+ `.metadata`) and `model_state_dict/full_weights.pt`, a few KB each."""
    actor = output / EXPERIMENT / "checkpoints" / f"global_step_{step}" / "actor"
    (actor / "dcp_checkpoint").mkdir(parents=True, exist_ok=True)
    (actor / "model_state_dict").mkdir(parents=True, exist_ok=True)
    state = hashlib.sha256(f"state-{step}".encode()).hexdigest() * (STATE_BYTES // 64)
    payload = json.dumps({"step": step, "weights": weights, "state": state}).encode()
    (actor / "dcp_checkpoint" / "__0_0.distcp").write_bytes(payload)
    (actor / "dcp_checkpoint" / ".metadata").write_text(json.dumps(
        {"step": step, "sha256": hashlib.sha256(payload).hexdigest(), "keys": ["fsdp_checkpoint.model"]}))
    (actor / "model_state_dict" / "full_weights.pt").write_bytes(json.dumps({"weights": weights}).encode())
    return actor


def resume(resume_dir: str, reasoning: bool = False) -> tuple[int, list[float]]:
    """RLinf's resume (rlinf-runtime.md §2.3, §3.3): the embodied runners say `Resuming training from checkpoint
    directory <dir>.`, the reasoning ones `Load from checkpoint folder: <dir>` then `Setting global step to <N>`;
    `<resume_dir>/actor` is required, its weights loaded as DCP loads them (at least one `*.distcp` and the
    `.metadata` DCP reads first), and the global step is the text after `global_step_`."""
    step = int(resume_dir.rstrip("/").rpartition("global_step_")[2])
    if reasoning:
        print(f"Load from checkpoint folder: {resume_dir}", flush=True)
        print(f"Setting global step to {step}", flush=True)
    else:
        _log("INFO", f"Resuming training from checkpoint directory {resume_dir}.")
    actor = Path(resume_dir) / "actor"
    if not actor.is_dir():
        raise SystemExit(f"AssertionError: resume_dir {actor} does not exist.")
    shards = sorted((actor / "dcp_checkpoint").glob("*.distcp"))
    if not shards:
        raise SystemExit(f"FileNotFoundError: no *.distcp file in {actor / 'dcp_checkpoint'}")
    metadata = actor / "dcp_checkpoint" / ".metadata"
    if not metadata.is_file():
        raise SystemExit(f"FileNotFoundError: [Errno 2] No such file or directory: '{metadata}'")
    weights = json.loads(shards[0].read_text())["weights"]
    return step, weights


def _event_writer(logdir: Path):
    """A tensorboardX writer on RLinf's `<log_path>/tensorboard/` (None without tensorboardX: no event files)."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        _log("WARNING", "tensorboardX is not installed; no TensorBoard event files are written.")
        return None
    return SummaryWriter(str(logdir), flush_secs=1)


def phase_times(step: int, steps: int, step_time: float) -> dict[str, float]:
    """RLinf's `time/*` phases of a step that shift over the run: actor training grows from a quarter of the
    step to 60 %, generating rollouts shrinks from 45 % to 25 % (so a bottleneck and its trend show)."""
    done = step / steps
    return {"time/generate_rollouts": step_time * (0.45 - 0.2 * done),
            "time/actor_training": step_time * (0.25 + 0.35 * done)}


def _write_scalars(writer, step: int, step_time: float, reward: float, loss: float, rng: random.Random,
                   phases: dict[str, float]) -> None:
    """RLinf's metric keys (rlinf-runtime.md §2.4) at TensorBoard step `step`, with noise so curves look real."""
    noisy = reward + rng.gauss(0, 0.08)
    for tag, value in (("rollout/rewards", noisy), ("env/return", noisy * 10 + rng.gauss(0, 0.5)),
                       ("env/success_once", min(1.0, max(0.0, noisy))),
                       ("train/actor/policy_loss", loss + rng.gauss(0, 0.02)),
                       ("train/critic/value_loss", 2 * loss + rng.gauss(0, 0.05)),
                       ("train/actor/grad_norm", loss * 3 + abs(rng.gauss(0, 0.1))),
                       ("time/step", step_time), *phases.items()):
        writer.add_scalar(tag, value, step)
    writer.flush()


def _wait_for_nodes(ray, num_nodes: int) -> list[dict]:
    while True:
        alive = [n for n in ray.nodes() if n.get("Alive")]
        if len(alive) >= num_nodes:
            return alive
        _log("WARNING", f"Waiting for {num_nodes} nodes to be ready, currently {len(alive)} nodes available.")
        time.sleep(1)


FAULTS = ("hang", "sigsegv", "cudaoom", "hostoom")
HOSTOOM_CAP = 4 << 30
"""The most `hostoom` allocates: a Pod without a memory limit holds that much, not the whole machine."""


def fault() -> tuple[str, int]:
    """`$RLARK_DEMO_FAULT` as (kind, rank), kind one of FAULTS; ("", -1) when unset."""
    kind, _, rank = os.environ.get("RLARK_DEMO_FAULT", "").partition(":")
    return (kind, int(rank)) if kind in FAULTS and rank.isdigit() else ("", -1)


class OutOfMemoryError(RuntimeError):
    """PyTorch's CUDA OOM as a traceback shows it (`torch.OutOfMemoryError: ...`), without importing torch."""


OutOfMemoryError.__module__ = "torch"


def cuda_oom() -> OutOfMemoryError:
    """The caching allocator's text (c10/cuda/CUDACachingAllocator.cpp) for an 80 GB GPU that is full."""
    return OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB "
        "is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use. Of the allocated memory "
        "75.50 GiB is allocated by PyTorch, and 1.92 GiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


def grow_memory(chunk: int = 32 << 20) -> list[bytearray]:
    """Host memory allocated and touched a chunk at a time (a few hundred MB a second, so the kubelet's limit is
    caught close to it) up to HOSTOOM_CAP, then held."""
    held: list[bytearray] = []
    while len(held) * chunk < HOSTOOM_CAP:
        held.append(bytearray(b"\x01" * chunk))
        time.sleep(0.05)
    return held


def next_batch() -> None:
    """A data loader that never yields: the rank never reaches the collective."""
    while True:
        time.sleep(1)


def allreduce(value: float) -> float:
    """The collective every rank must join: with one rank missing it waits for ever, as NCCL's would."""
    threading.Event().wait()
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demo_workload")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--code-ref", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--save-interval", type=int, default=10)
    parser.add_argument("--step-seconds", type=float, default=1.0)
    parser.add_argument("--reasoning", action="store_true",
                        help="draw the reasoning runners' `Global Step` tqdm bar on stderr instead of metric tables")
    parser.add_argument("--nodes", type=int, default=int(os.environ.get("RLARK_TOTAL_NODES", "1")))
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="Hydra-style overrides, as RLinf's entry scripts take them; runner.resume_dir is honoured")
    args = parser.parse_args(argv)
    overrides = dict(word.partition("=")[::2] for word in args.overrides)
    args.resume_dir = overrides.get("runner.resume_dir") or None

    print(f"Run ID: {args.run_id}", flush=True)
    print(f"Code ref: {args.code_ref}", flush=True)
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    ray.init(address="auto", namespace="RLinf", logging_level=logging.WARNING)  # workers' output forwarded (log_to_driver), as RLinf has it
    nodes = _wait_for_nodes(ray, args.nodes)

    @ray.remote(num_cpus=0)
    class Worker:
        def __init__(self, rank: int) -> None:
            self.rank = rank

        def __repr__(self) -> str:  # RLinf's Worker.__repr__, which Ray's task errors quote (`repr=...`)
            return f"ActorGroup(rank={self.rank})"

        def probe(self) -> dict:
            return {"node_rank": int(os.environ.get("RLINF_NODE_RANK", "-1")), "pid": os.getpid()}

        def step(self, step: int, rank: int) -> dict[str, float]:
            rng = random.Random(step * 7919 + os.getpid())
            loss = 1 / (1 + step) + rng.random() / 50
            kind, odd = fault()
            if step > 1 and rank == odd and kind == "sigsegv":
                os.kill(os.getpid(), signal.SIGSEGV)
            if step > 1 and rank == odd and kind == "cudaoom":
                raise cuda_oom()
            if step > 1 and rank == odd and kind == "hostoom":
                grow_memory()
            if step > 1 and kind == "hang":
                if rank == odd:
                    next_batch()
                loss = allreduce(loss)
            return {"reward": math.tanh(step / 20) + rng.uniform(-0.05, 0.05), "loss": loss}

    # the driver's own node first (rank 0 there, as RLinf places it), the others by ID
    here = ray.get_runtime_context().get_node_id()
    ordered = sorted(nodes, key=lambda n: (n["NodeID"] != here, n["NodeID"]))
    ranks = int(os.environ.get("RLARK_DEMO_RANKS") or 0) or len(ordered)
    workers = []
    for index in range(ranks):
        node = ordered[index % len(ordered)]
        strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
        # ray.remote makes Worker an ActorClass, which Ray's annotations do not say
        actor = Worker.options(scheduling_strategy=strategy, name=f"ActorGroup:{index}")  # type: ignore[attr-defined]
        workers.append((node, actor.remote(index)))
    probes = ray.get([w.probe.remote() for _, w in workers])
    rank_of = {id(actor): index for index, (_, actor) in enumerate(workers)}
    ranked = list(zip(probes, workers)) if os.environ.get("RLARK_DEMO_RANKS") else \
        sorted(zip(probes, workers), key=lambda item: item[0]["node_rank"])[:args.nodes]

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
    weights = [0.0] * 8
    start_step = 0
    if args.reasoning:
        print(f"Size of train dataloader: {args.steps}", flush=True)
    if args.resume_dir:
        start_step, weights = resume(args.resume_dir, reasoning=args.reasoning)
    elif args.reasoning:
        print("Training from scratch", flush=True)
    bar = tqdm_bar(args.steps, initial=start_step) if args.reasoning else None
    started = time.monotonic()
    for step in range(start_step + 1, args.steps + 1):
        step_start = time.monotonic()
        try:
            results = ray.get([w.step.remote(step, rank_of[id(w)]) for _, (_, w) in ranked])
        except ray.exceptions.RayActorError:
            traceback.print_exc()
            _log("ERROR", "A worker died during training; see the dead worker's log above.")
            return 1
        except ray.exceptions.RayTaskError as error:
            # RLinf's Worker wrapper: the remote exception (its traceback, the worker's PID) then the exit line
            print(f"Exception occurred while running Worker's function step: exception is {error}", flush=True)
            _log("ERROR", "Exiting main process due to a failure upon worker execution.")
            return 1
        reward = sum(r["reward"] for r in results) / len(results)
        loss = sum(r["loss"] for r in results) / len(results)
        weights = [w + loss / 10 for w in weights]
        time.sleep(max(0.0, args.step_seconds - (time.monotonic() - step_start)))
        step_time = time.monotonic() - step_start
        phases = phase_times(step, args.steps, step_time)
        if bar is not None:
            bar.set_postfix({"step_time": step_time, "rollout_time": phases["time/generate_rollouts"],
                             "actor/training_time": phases["time/actor_training"], "rewards": reward,
                             "actor/policy_loss": loss}, refresh=False)
            bar.update(1)
        else:
            table = metric_table(step, args.steps, time.monotonic() - started, start_step=start_step, metrics={
                "time/step": step_time, **phases, "env/success_once": min(1.0, reward),
                "env/return": reward * 10, "rollout/rewards": reward, "train/actor/policy_loss": loss,
                "train/actor/grad_norm": loss * 3, "train/actor/lr": 1e-4, "train/critic/value_loss": 2 * loss})
            print(table, flush=True)
            with metrics_log.open("a", encoding="utf-8") as fh:
                fh.write(table + "\n")
        if events is not None:
            _write_scalars(events, step, step_time, reward, loss, random.Random(step), phases)
        if args.save_interval > 0 and (step % args.save_interval == 0 or step == args.steps):
            if bar is None:
                print(f"Saving checkpoint at step {step}.", flush=True)
            write_checkpoint(output, step, weights)
    if bar is not None:
        bar.close()
        _log("INFO", f"Step limit given by max_steps={args.steps} reached. Stopping run")
    _log("INFO", f"Training finished after {args.steps} steps; keeping the driver alive.")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
