"""Reading a Job's RLinf checkpoints (issue 35 item 3), the one read `rlark checkpoints`, `rlark resume`, `rlark top
job` and the TUI's Checkpoints tab share: the resolved config RLinf printed at the start of the Header Pod's log
(where the checkpoints go, the component placement), then the listing of that location: through the gateway's
storage routes (`GET .../list`, as `rlark storage ls -r`) when one of the Job's object-storage mounts covers it,
else the fixed read-only `list-files` in the Header Pod (either way `--readonly` allows it). I/O only; the rows are
telemetry/checkpoints.py. Every failure is a one-line CheckpointsUnavailable (an RlarkError).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from rlark_tui.checks import logscan
from rlark_tui.checks.probe import parse_listing
from rlark_tui.cluster.errors import ApiError, Unreachable
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.logmerge import split_raw
from rlark_tui.cluster.metrics import Header, MetricsUnavailable, find_header
from rlark_tui.cluster.podexec import run_fixed
from rlark_tui.errors import RlarkError
from rlark_tui.model import storage as st
from rlark_tui.model.objects import Job, Task
from rlark_tui.model.quantity import size_text
from rlark_tui.model.timefmt import parse_time
from rlark_tui.telemetry.checkpoints import CheckpointRead, Location, checkpoints, location
from rlark_tui.text.sanitize import clean

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess

CONFIG_LINES = 20_000
"""How far into the Header log the resolved config is looked for (RLinf prints it at start-up)."""
CONFIG_BYTES = 64 << 20
"""The most those lines hold (sys.getsizeof of their texts): the read stops before the line that would pass it, and
the message that no config was found says so. A line may be 16 MiB (http.MAX_LINE_BYTES), so 20,000 were 320 GiB;
RLinf prints the config before its first step, and the run check looks for it in the log's first 64 MiB too
(checks.gather.LOG_HEAD_BYTES)."""


class CheckpointsUnavailable(RlarkError):
    """The Job's checkpoints cannot be listed: no Header Pod, no config in its log, no location in the config."""


def resolved_config(access: ClusterAccess, header: Header, what: str = "checkpoints",
                    lacking: str = "no checkpoint location") -> dict[str, Any]:
    """The resolved config RLinf printed at the start of the Header Pod's log (read from the start, at most
    CONFIG_LINES lines holding at most CONFIG_BYTES, and no further than the config's end). A read that fails or
    finds none is CheckpointsUnavailable, one line that `what` (the command asking) starts and says it leaves
    `lacking`."""
    lines: list[str] = []
    opened: list[tuple[int, int]] = []
    """Each `{` line whose block is still open, as logscan.resolved_config reads one: its index and the depth of
    the braces before it. A block is judged once, when it closes (judging every block again at each `}` line was
    quadratic: 4,000 lines of `{` and `}` took 20 s)."""
    held = depth = 0
    full = False
    block = None
    try:
        stream = access.pod_log(header.cluster, header.pod, timestamps=True, read_timeout=30)
        try:
            for raw in stream:
                text = split_raw(raw)[2]
                held += sys.getsizeof(text)
                if held > CONFIG_BYTES:
                    full = True
                    break
                lines.append(text)
                line = text.rstrip()
                if line == "{":
                    opened.append((len(lines) - 1, depth))
                depth += line.count("{") - line.count("}")
                while block is None and opened and depth <= opened[-1][1]:
                    block = logscan.config_block(lines, opened.pop()[0], len(lines) - 1)
                if block is not None or len(lines) >= CONFIG_LINES:
                    break
        finally:
            stream.close()
    except (ApiError, Unreachable) as exc:
        raise CheckpointsUnavailable(f"{what}: the Header log of {header.job}: {exc}, so {lacking}") from exc
    if block is None:
        stopped = (f", where its read stopped to hold at most {size_text(CONFIG_BYTES)} (the read's bound)" if full
                   else "")
        raise CheckpointsUnavailable(f"{what}: the Header log of {header.job} ({header.pod}) has no resolved "
                                     f"RLinf config in its first {len(lines):,} lines{stopped}, so {lacking}")
    return block.config


def listing(access: ClusterAccess, header: Header, where: Location) -> list[tuple[str, int, float]]:
    """(path, size, mtime) of every regular file below `where` in the Header Pod."""
    result = run_fixed(access, header.cluster, header.pod, "list-files", where.path)
    if result.exit_code is None and not result.truncated:
        raise CheckpointsUnavailable(f"checkpoints: listing {where.path} in Pod {header.pod} did not finish in time")
    return [(f.path, f.size, f.mtime.timestamp()) for f in parse_listing(result.stdout)]


STORAGE_PAGE_KEYS = 1000
"""Objects asked for per page of a storage listing."""


def storage_listing(access: ClusterAccess, mount: st.StorageMount, where: Location) -> list[tuple[str, int, float]]:
    """(path in the Pods, size, mtime) of every object below `where` in the object storage `mount` backs, read
    through the gateway's storage routes page by page."""
    prefix = mount.key(where.path)
    prefix = prefix + "/" if prefix else ""

    def fetch(marker: str) -> st.Page:
        return st.parse_page(access.storage_list(mount.storage_class, mount.cluster, prefix, delimiter="",
                                                 marker=marker, max_keys=STORAGE_PAGE_KEYS), prefix)
    files = []
    try:
        for page in st.pages(fetch, f"checkpoints: listing {mount.storage_class}:{prefix}"):
            for entry in page.entries:
                at = parse_time(entry.modified)
                if not entry.folder and entry.size is not None and at is not None:
                    files.append((mount.path(entry.key), entry.size, at.timestamp()))
    except (ApiError, Unreachable) as exc:
        raise CheckpointsUnavailable(f"checkpoints: listing {where.path} in object storage "
                                     f"{mount.storage_class}/{mount.cluster} through the gateway: {exc}") from exc
    except st.ListingBound as exc:
        raise CheckpointsUnavailable(str(exc)) from None
    return files


def storage_mount(access: ClusterAccess, job: str, where: Location) -> st.StorageMount | None:
    """The Job's object-storage mount over the checkpoint location (None: the location is not in object storage)."""
    try:
        tasks = access.job_tasks(job)
        return st.mount_over(Job(access.get(JOBS, job)), {Task(t).name: Task(t).namespace for t in tasks}, where.path)
    except (ApiError, Unreachable) as exc:
        raise CheckpointsUnavailable(f"checkpoints: reading job {job}'s mounts: {exc}") from exc


def placement(config: dict[str, Any]) -> object:
    """RLinf's `cluster.component_placement` of a resolved config (None when it has none)."""
    cluster = config.get("cluster")
    return cluster.get("component_placement") if isinstance(cluster, dict) else None


def read_checkpoints(access: ClusterAccess, job: str, what: str = "checkpoints") -> CheckpointRead:
    """The Job's checkpoints where its resolved config saves them, with that config's component placement;
    `what` starts the message of a failure (the command asking)."""
    try:
        header = find_header(access, job)
    except MetricsUnavailable as exc:
        raise CheckpointsUnavailable(f"{what}: {str(exc).removeprefix('metrics: ')}") from None
    config = resolved_config(access, header, what)
    where = location(config)
    if where is None:
        raise CheckpointsUnavailable(f"{what}: the resolved config of {job} names no checkpoint location "
                                     "(runner.logger.log_path and experiment_name, or runner.output_dir and "
                                     "runner.experiment_name)")
    mount = storage_mount(access, job, where)
    if mount is None:
        return CheckpointRead(job, where, header.pod, tuple(checkpoints(where, listing(access, header, where))),
                              placement(config))
    return CheckpointRead(job, where, header.pod, tuple(checkpoints(where, storage_listing(access, mount, where))),
                          placement(config), clean(f"{mount.storage_class}/{mount.cluster}"))
