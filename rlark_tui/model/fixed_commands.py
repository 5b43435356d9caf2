"""The one allow-list of fixed read-only commands rlark itself runs inside a Pod's `main` container.

Each entry is a name, an argv builder that checks its parameters, and the time and output bounds it runs under.
`cluster/podexec.run_fixed` runs only these (also under `--readonly`, which refuses every user-typed exec); a
parameter comes from a Job or the cluster, so a builder never lets one become an option or a shell word.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from rlark_tui.errors import RlarkError
from rlark_tui.text.parse import ascii_int


class FixedCommandError(RlarkError):
    """An unknown fixed command, or a parameter its builder refuses."""


@dataclass(frozen=True)
class FixedCommand:
    name: str
    what: str
    """One line for the README and `--help`: what it reads."""
    build: Callable[..., list[str]]
    timeout: float
    max_output: int


def _path(value: object, what: str) -> str:
    """An absolute path as one argv word: never an option (`find -delete`), never NUL."""
    if not isinstance(value, str) or not value.startswith("/") or "\0" in value:
        raise FixedCommandError(f"{what} must be an absolute path, not {value!r}"[:200])
    return value


def _list_files(location: str) -> list[str]:
    """Every regular file under `location` (or the file itself): `<mtime> <size> <path>` NUL-terminated."""
    return ["find", _path(location, "the output location"), "-type", "f", "-printf", "%T@ %s %p\\0"]


def _hash_files(*paths: str) -> list[str]:
    if not paths:
        raise FixedCommandError("sha256sum needs at least one path")
    return ["sha256sum", "--", *(_path(p, "a file to checksum") for p in paths)]


RAY_TOKEN_SCRIPT = (
    'if [ -n "${RAY_AUTH_TOKEN:-}" ]; then printf %s "$RAY_AUTH_TOKEN"; '
    'elif [ -n "${RAY_AUTH_TOKEN_PATH:-}" ]; then cat -- "$RAY_AUTH_TOKEN_PATH"; '
    'else cat -- "${HOME:-/root}/.ray/auth_token"; fi')
"""Ray's own order: `RAY_AUTH_TOKEN`, else the file `RAY_AUTH_TOKEN_PATH` names, else Ray's default token file."""


def _ray_token() -> list[str]:
    return ["sh", "-c", RAY_TOKEN_SCRIPT]


GPU_QUERY = ("nvidia-smi", "--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total",
             "--format=csv,noheader,nounits")
"""The GPU read (telemetry/sample.py parses its rows): what the platform's user guide has users run in the Pod."""
CGROUP_FILES = ("/sys/fs/cgroup/cpu.stat", "/sys/fs/cgroup/memory.current")
"""The container's own cgroup v2 files, read where the member cluster serves no metrics.k8s.io PodMetrics."""


def _gpu_query() -> list[str]:
    return list(GPU_QUERY)


def _cgroup_usage() -> list[str]:
    return ["cat", "--", *CGROUP_FILES]


PY_SPY_SCRIPT = ('command -v py-spy >/dev/null 2>&1 || { echo "py-spy: not found" >&2; exit 127; }; '
                 'exec py-spy dump --pid "$1"')
"""py-spy's dump of one process; a Pod without py-spy on its PATH exits 127 (so the reason can be told)."""


def _py_spy_dump(pid: str) -> list[str]:
    """`py-spy dump --pid <pid>`: the PID as one decimal word, never an option."""
    if not isinstance(pid, str) or ascii_int(pid) is None or len(pid) > 10:
        raise FixedCommandError(f"a process ID is a decimal number, not {pid!r}"[:200])
    return ["sh", "-c", PY_SPY_SCRIPT, "py-spy-dump", pid]


FIXED: Mapping[str, FixedCommand] = MappingProxyType({c.name: c for c in (
    FixedCommand("list-files", "`find <output path> -type f -printf '%T@ %s %p\\0'`: the run check's output listing "
                 "and `rlark checkpoints` (sizes, mtimes)", _list_files, timeout=20.0, max_output=1 << 20),
    FixedCommand("hash-files", "`sha256sum -- <files>`: checksums of the newest output files (run check 5)",
                 _hash_files, timeout=60.0, max_output=160 * 1024),
    FixedCommand("ray-token", "the Ray token of the Header Pod (`$RAY_AUTH_TOKEN`, else the file "
                 "`$RAY_AUTH_TOKEN_PATH`, else `~/.ray/auth_token`), only after Ray answered 401; never shown or "
                 "stored", _ray_token, timeout=15.0, max_output=4096),
    FixedCommand("gpu-query", f"`{' '.join(GPU_QUERY)}`: each GPU's utilisation and memory, only in Running "
                 "Pods that request GPUs", _gpu_query, timeout=15.0, max_output=16 * 1024),
    FixedCommand("cgroup-usage", f"`cat -- {' '.join(CGROUP_FILES)}`: the container's CPU time and memory, "
                 "where the cluster serves no PodMetrics", _cgroup_usage, timeout=10.0, max_output=4096),
    FixedCommand("py-spy-dump", "`py-spy dump --pid <pid>`: the Python stack of one Ray worker the State API lists "
                 "in that Pod (`rlark stacks`, when Ray's dashboard has profiling off)", _py_spy_dump, timeout=15.0,
                 max_output=256 * 1024),
)})


def command(name: str) -> FixedCommand:
    try:
        return FIXED[name]
    except KeyError:
        raise FixedCommandError(f"{name!r} is not one of rlark's fixed read-only commands "
                                f"({', '.join(sorted(FIXED))})") from None


def argv(name: str, *params: str) -> list[str]:
    """The argv of fixed command `name` with `params`; FixedCommandError for an unknown name or a refused parameter."""
    spec = command(name)
    try:
        return spec.build(*params)
    except TypeError:
        raise FixedCommandError(f"fixed command {name} takes other parameters") from None
