"""A run's checkpoints as RLinf lays them out (rlinf-runtime.md §3): where the Job's resolved config puts them
(§3.1, both runner families), each `global_step_<N>`'s size and time, and whether it is complete by the read-only
structure check of §3.4 step 1 (what is missing, if not). Pure: a config and a file listing in, rows out.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from rlark_tui.model.storage import human_size
from rlark_tui.text.parse import ascii_int
from rlark_tui.text.sinks import one_line

STEP_PREFIX = "global_step_"
REASONING_TASKS = ("reasoning", "coding", "agent")
"""`runner.task_type` values of the runners that save under `runner.output_dir` (the rest: embodied, SFT)."""


@dataclass(frozen=True, slots=True)
class Location:
    path: str
    family: str
    """embodied (`<log_path>/<experiment_name>/checkpoints`) or reasoning (`<output_dir>/<experiment_name>/…`)."""
    full_weights: bool
    """Whether FSDP also writes `model_state_dict/full_weights.pt` (actor.fsdp_config.save_full_model_weights)."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    name: str
    step: int
    bytes: int
    at: float
    complete: bool
    missing: tuple[str, ...]

    def to_json(self) -> dict:
        return {"name": self.name, "step": self.step, "bytes": self.bytes, "at": self.at, "complete": self.complete,
                "missing": list(self.missing)}


@dataclass(frozen=True, slots=True)
class CheckpointRead:
    """One read of a Job's checkpoints: where its resolved config saves them, the Header Pod whose log gave that
    config, what was found there (by step), the config's `cluster.component_placement` (None: not printed), and
    the object storage (`<class>/<cluster>`) they were listed in when a storage mount covers the location ("":
    listed in the Pod)."""

    job: str
    where: Location
    pod: str
    found: tuple[Checkpoint, ...]
    placement: object = None
    storage: str = ""

    @property
    def listed_in(self) -> str:
        """Where the listing was read, as the CLI and the tab say it: one line (sinks.one_line), since it names a
        Pod (the data plane's text) or a storage mount (the Job author's)."""
        return one_line(f"in object storage {self.storage}" if self.storage else f"in Pod {self.pod}")


def _get(config: object, path: str) -> object:
    for key in path.split("."):
        if not isinstance(config, Mapping):
            return None
        config = config.get(key)
    return config


def location(config: Mapping) -> Location | None:
    """Where the config's runner saves `global_step_<N>` directories, None when it does not say."""
    task_type = _get(config, "runner.task_type")
    reasoning = (isinstance(task_type, str) and task_type.startswith(REASONING_TASKS)) or (
        _get(config, "runner.logger.log_path") is None and _get(config, "runner.output_dir") is not None)
    if reasoning:
        base, name, family = _get(config, "runner.output_dir"), _get(config, "runner.experiment_name"), "reasoning"
    else:
        base, name, family = _get(config, "runner.logger.log_path"), _get(config, "runner.logger.experiment_name"), \
            "embodied"
    if not isinstance(base, str) or not base.startswith("/") or not isinstance(name, str) or not name \
            or "/" in name or name in (".", "..") or not _shown_as_is(base + name):
        return None
    full = _get(config, "actor.fsdp_config.save_full_model_weights")
    return Location(posixpath.join(posixpath.normpath(base), name, "checkpoints"), family, full is not False)


MAX_PATH = 4096
"""PATH_MAX: a longer location is no directory RLinf could have written."""


def _shown_as_is(path: str) -> bool:
    """A location from the Header log is shown on one line (`location: …`) and goes into the run command: one with a
    line break, a tab, a bidi or other format character, or past MAX_PATH is refused (it would forge the lines
    after it, or read as another path), not escaped into a different path."""
    return len(path) <= MAX_PATH and path.isprintable()


def _step(name: str) -> int | None:
    digits = name[len(STEP_PREFIX):] if name.startswith(STEP_PREFIX) else ""
    return ascii_int(digits)


def checkpoints(where: Location, files: Iterable[tuple[str, int, float]]) -> list[Checkpoint]:
    """Every `global_step_<N>` directory right under `where.path` among `files` ((path, size, mtime) of each
    regular file below it), by step; each with its total size, newest file time and what §3.4 step 1 misses."""
    prefix = where.path.rstrip("/") + "/"
    trees: dict[str, dict[str, tuple[int, float]]] = {}
    for path, size, mtime in files:
        if not path.startswith(prefix):
            continue
        top, _, rest = path[len(prefix):].partition("/")
        if rest and _step(top) is not None:
            trees.setdefault(top, {})[rest] = (size, mtime)
    found = []
    for name, tree in trees.items():
        missing = _missing(tree, where)
        found.append(Checkpoint(name, _step(name) or 0, sum(size for size, _ in tree.values()),
                                max(mtime for _, mtime in tree.values()), not missing, tuple(missing)))
    return sorted(found, key=lambda c: c.step)


def _missing(tree: Mapping[str, tuple[int, float]], where: Location) -> list[str]:
    """§3.4 step 1: the files a load needs exist and are not empty."""
    missing = [f"{one_line(path)} (empty)" for path, (size, _) in sorted(tree.items()) if size == 0]

    def has(predicate) -> bool:
        return any(predicate(path) and size > 0 for path, (size, _) in tree.items())

    if any(path.startswith("actor/iter_") for path in tree):  # Megatron
        if not has(lambda p: p == "actor/latest_checkpointed_iteration.txt"):
            missing.append("actor/latest_checkpointed_iteration.txt")
    elif any(path.startswith("actor/local_shard_checkpoint/") for path in tree):
        if not has(lambda p: p.startswith("actor/local_shard_checkpoint/checkpoint_rank_") and p.endswith(".pt")):
            missing.append("actor/local_shard_checkpoint/checkpoint_rank_<r>.pt")
    else:  # FSDP's DCP checkpoint
        if not has(lambda p: p.startswith("actor/dcp_checkpoint/") and p.endswith(".distcp")):
            missing.append("actor/dcp_checkpoint/*.distcp")
        if not has(lambda p: p == "actor/dcp_checkpoint/.metadata"):
            missing.append("actor/dcp_checkpoint/.metadata")
        if where.full_weights and not has(lambda p: p == "actor/model_state_dict/full_weights.pt"):
            missing.append("actor/model_state_dict/full_weights.pt")
    if where.family == "reasoning" and not has(lambda p: p == "data/data.pt"):
        missing.append("data/data.pt")
    return missing


def latest_complete(found: list[Checkpoint]) -> Checkpoint | None:
    return next((c for c in reversed(found) if c.complete), None)


def state_text(checkpoint: Checkpoint, latest: Checkpoint | None) -> str:
    """`complete (latest)`, `complete`, or `incomplete: missing <what>`."""
    if not checkpoint.complete:
        return "incomplete: missing " + ", ".join(checkpoint.missing)
    return "complete" + (" (latest)" if checkpoint is latest else "")


TABLE_HEADERS = ("NAME", "STEP", "SIZE", "TIME", "STATE")


def table_rows(found: Sequence[Checkpoint]) -> list[list[str]]:
    """The cells of each checkpoint under TABLE_HEADERS, as `rlark checkpoints` and the Checkpoints tab show them."""
    latest = latest_complete(list(found))
    return [[c.name, str(c.step), human_size(c.bytes), datetime.fromtimestamp(c.at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
             state_text(c, latest)] for c in found]


def to_json(job: str, where: Location, found: list[Checkpoint]) -> dict:
    latest = latest_complete(found)
    return {"job": job, "location": where.path, "checkpoints": [c.to_json() for c in found],
            "latest_complete": latest.name if latest else None}
