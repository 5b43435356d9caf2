"""WorkersTree: one row per role (expected vs actual Pods) expanding to its Pod subtable; RoleGpuUse under it: GPU
use by role and the imbalance note.

Updated in place: role and Pod nodes are kept by key and relabelled only when their text changes. Both show the
rows they are given (view.index.role_rows bounds them); what is left out is counted in one line, last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from rlark_tui.model.podstate import PodHealth
from rlark_tui.telemetry.balance import memory_cell, util_cell
from rlark_tui.telemetry.sample import PodUsage
from rlark_tui.telemetry.usage import cpu_cell, gpu_cell, gpu_mem_cell, mem_cell
from rlark_tui.text.redact import redact_text
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import cut, one_line, pad
from rlark_tui.view.index import GpuByRole, PodRow, RoleRow

NO_PODS = "No Pod details yet — waiting for task sync"
MESSAGE_CHARS = 200
"""Characters of a role's (its Task's) message the tree shows: 64 roles of 100 KB messages were 10 s of the UI thread
to open the Workers tab and 2 s at each change of them."""
CELL_CHARS = 256
"""Characters of a Pod row's cell the tree shows (`sinks.cut`), as many as a Kubernetes name may have: a data plane's
Pod names, nodes and reasons of 100 KB held the UI thread past 30 s to open the Workers tab."""
POD_COLUMNS = (("POD", 28), ("NODE", 14), ("IP", 16), ("PHASE", 10), ("REASON", 24), ("RESTARTS", 8),
               ("GPU%", 5), ("GPU MEM", 11), ("CPU", 7), ("MEM", 7))


@dataclass(frozen=True)
class WorkerRef:
    """What a tree node stands for: a role (Task) or one Pod of it."""

    kind: str
    task_name: str
    pod_key: str = ""


def _cols(values: tuple[str, ...], columns: tuple[tuple[str, int], ...] = POD_COLUMNS) -> str:
    """Cells side by side, each one line (sinks.one_line) padded by the columns it shows (sinks.pad): a cell of
    wide characters padded by its length stood its row's next cells under the next headers, and a role name with a
    line break added a row of its own; each to CELL_CHARS characters."""
    return "  ".join(pad(one_line(cut(value, CELL_CHARS)), width) for value, (_, width) in zip(values, columns))


def _plain(label: str) -> Text:
    """A tree label as text on one line (sinks.one_line): a str label would be Rich markup, and a Task message from
    the cluster could hold `[@click=...]`; the tree shows a label's first line only, so a role name with a line
    break hid the rest of its row."""
    return Text(one_line(label))


def _short(message: str) -> str:
    """A role's message to MESSAGE_CHARS characters, redacted: a secret within four times as many is masked whole."""
    shown = redact_text(message[:MESSAGE_CHARS * 4])
    if len(shown) <= MESSAGE_CHARS and len(message) <= MESSAGE_CHARS * 4:
        return shown
    return shown[:MESSAGE_CHARS] + "…"


def role_label(row: RoleRow) -> str:
    header = "  [Header]" if row.head else ""
    where = f"  in {row.namespace}" if row.namespace else ""
    phase = f"  {row.phase}" if row.phase else ""
    message = f" — {_short(row.message)}" if row.message else ""
    return (f"{cut(row.task_name)} ({cut(row.role)}){header}  Pods {row.pod_count}/{row.expected}"
            f"  running {row.running}{phase}{where}{message}")


def pod_label(pod: PodRow, health: PodHealth | None, usage: PodUsage | None = None) -> str:
    """One Pod row; restart count and failure reason are "-" until a data plane reported them, GPU%, GPU MEM, CPU
    and MEM until the usage topic sampled the Pod (and GPU numbers stay "-" for a Pod without GPUs or nvidia-smi)."""
    reason = (health.reason or "-") if health else "-"
    return _cols((pod.name, pod.node or "-", pod.ip or "-", pod.phase or "-", reason,
                  str(health.restarts) if health else "-", gpu_cell(usage), gpu_mem_cell(usage), cpu_cell(usage),
                  mem_cell(usage)))


class WorkersTree(Tree[WorkerRef]):
    """Roles are expanded by default so the Pods (Node, IP, phase) are visible at once."""

    COMPONENT_CLASSES = Tree.COMPONENT_CLASSES | {"workers-tree--header", "workers-tree--empty"}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("Workers", **kwargs)
        self.show_root = False
        self.guide_depth = 2
        self._roles: dict[str, TreeNode[WorkerRef]] = {}
        self._pods: dict[str, dict[str, TreeNode[WorkerRef]]] = {}
        self._placeholders: dict[str, TreeNode[WorkerRef]] = {}
        self._more: dict[str, TreeNode[WorkerRef]] = {}
        """The line counting what is not shown: of the roles (key "") or of a role's Pods (its Task name)."""
        self._labels: dict[int, str] = {}

    def sync(self, rows: Sequence[RoleRow], restarts: Mapping[str, PodHealth],
             usage: Mapping[str, PodUsage] | None = None, more: str = "") -> None:
        """Show exactly `rows`, then `more` (the roles left out, "" for none); `restarts` maps a Pod key to its
        restart count and failure reason when a data plane is known, `usage` to its resource-use sample."""
        usage = usage or {}
        wanted = {row.task_name for row in rows}
        for task_name in [t for t in self._roles if t not in wanted]:
            self._roles.pop(task_name).remove()
            self._pods.pop(task_name, None)
            self._placeholders.pop(task_name, None)
            self._more.pop(task_name, None)
        for row in rows:
            node = self._roles.get(row.task_name)
            if node is None:
                node = self.root.add(_plain(role_label(row)), WorkerRef("role", row.task_name),
                                     before=self._more.get(""), expand=True)
                node.add_leaf(Text(_cols(tuple(name for name, _ in POD_COLUMNS)),
                                   style=self.get_component_rich_style("workers-tree--header", partial=True)),
                              WorkerRef("header", row.task_name))
                self._roles[row.task_name] = node
                self._pods[row.task_name] = {}
            self._relabel(node, role_label(row))
            self._sync_pods(node, row, restarts, usage)
        self._sync_more(self.root, "", more)

    def _sync_more(self, node: TreeNode[WorkerRef], key: str, label: str) -> None:
        """The last line under `node` counting what is left out ("" for none)."""
        line = self._more.get(key)
        if not label:
            if line is not None:
                self._more.pop(key).remove()
        elif line is None:
            self._more[key] = node.add_leaf(
                Text(clean(label), style=self.get_component_rich_style("workers-tree--empty", partial=True)),
                WorkerRef("more", key))
        elif str(line.label) != label:
            line.set_label(Text(clean(label), style=self.get_component_rich_style("workers-tree--empty",
                                                                                   partial=True)))

    def _sync_pods(self, node: TreeNode[WorkerRef], row: RoleRow, restarts: Mapping[str, PodHealth],
                   usage: Mapping[str, PodUsage]) -> None:
        pods = self._pods[row.task_name]
        wanted = {pod.key for pod in row.pods}
        for key in [k for k in pods if k not in wanted]:
            pods.pop(key).remove()
        for pod in row.pods:
            label = pod_label(pod, restarts.get(pod.key), usage.get(pod.key))
            leaf = pods.get(pod.key)
            if leaf is None:
                pods[pod.key] = node.add_leaf(_plain(label), WorkerRef("pod", row.task_name, pod.key),
                                              before=self._more.get(row.task_name))
                self._labels[pods[pod.key].id] = label
            else:
                self._relabel(leaf, label)
        left_out = row.pod_count - len(row.pods)
        self._sync_more(node, row.task_name, f"… {left_out:,} more Pods (the first {len(row.pods):,} shown)"
                        if left_out > 0 else "")
        placeholder = self._placeholders.get(row.task_name)
        if row.pods and placeholder is not None:
            self._placeholders.pop(row.task_name).remove()
        elif not row.pods and placeholder is None:
            self._placeholders[row.task_name] = node.add_leaf(
                Text(NO_PODS, style=self.get_component_rich_style("workers-tree--empty", partial=True)),
                WorkerRef("empty", row.task_name))

    def _relabel(self, node: TreeNode[WorkerRef], label: str) -> None:
        if self._labels.get(node.id) != label:
            self._labels[node.id] = label
            node.set_label(_plain(label))

    def shown_text(self) -> str:
        """Every visible line as plain text (what the user reads), for tests and copy."""
        lines = []
        for node in self.root.children:
            lines.append(str(node.label))
            if node.is_expanded:
                lines.extend(str(child.label) for child in node.children)
        return "\n".join(lines)

    @property
    def selected_ref(self) -> WorkerRef | None:
        node = self.cursor_node
        return node.data if node is not None else None


GPU_COLUMNS = (("ROLE", 16), ("PODS", 4), ("GPUS", 4), ("GPU% MIN/MEAN/MAX", 17), ("GPU-MEM MIN/MEAN/MAX", 20))


class RoleGpuUse(Static):
    """Under the Workers tree: GPU use by role (min/mean/max over each role's GPUs, as `rlark top job` prints it) and
    the imbalance note; hidden until a role's GPUs were sampled."""

    def show(self, gpu: GpuByRole, limit: int) -> None:
        """The first `limit` roles' use (the rest counted), then the note."""
        self.display = gpu.measured
        if not gpu.measured:
            return
        lines = [_cols(tuple(label for label, _ in GPU_COLUMNS), GPU_COLUMNS)]
        for row in gpu.rows[:limit]:
            lines.append(_cols((row.role, str(row.pods), str(row.gpus), util_cell(row), memory_cell(row)),
                               GPU_COLUMNS))
        if len(gpu.rows) > limit:
            lines.append(f"… {len(gpu.rows) - limit:,} more roles (the first {limit:,} shown)")
        if gpu.note:
            lines.append(f"imbalance: {gpu.note}")
        self.update(Text(clean("\n".join(lines))))
