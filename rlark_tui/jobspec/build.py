"""One call from draft text (or mapping) and Nodes to the Job manifest and its findings; Node list parsing.

Used by `rlark draft render`, the submit path and the wizard; pure (callers read files and clusters).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rlark_tui.jobspec.draft import DraftInputError, JobDraft, load_draft, parse_yaml
from rlark_tui.jobspec.findings import Finding, has_errors, ordered
from rlark_tui.jobspec.render import render_job
from rlark_tui.jobspec.validate import validate
from rlark_tui.model.placement import node_set


@dataclass(frozen=True)
class DraftResult:
    """A loaded draft, its rendered manifest and every finding (loading + validation), errors first."""

    draft: JobDraft
    manifest: dict
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        """True when no finding is an error: the manifest may be submitted."""
        return not has_errors(self.findings)


def build_job(source: str | bytes | Mapping | JobDraft, nodes: Iterable[Any],
              existing_jobs: Iterable[Any] | None = None, *,
              storage_classes: Mapping[str, Collection[str]] | None = None,
              domains: Collection[str] | None = None,
              edit: Callable[[JobDraft], JobDraft] | None = None) -> DraftResult:
    """Load (unless given a JobDraft), change with `edit` (a placement given on the command line), validate and
    render. Raises DraftInputError for unusable input."""
    load_findings: list[Finding]
    if isinstance(source, JobDraft):
        draft, load_findings = source, []
    else:
        draft, load_findings = load_draft(source)
    if edit is not None:
        draft = edit(draft)
    nodes = node_set(nodes)
    findings = load_findings + validate(draft, nodes, existing_jobs, storage_classes=storage_classes,
                                        domains=domains)
    return DraftResult(draft=draft, manifest=render_job(draft, nodes), findings=ordered(findings))


def parse_nodes(source: str | bytes | Any) -> list[dict]:
    """Node dicts from YAML text (a list of Nodes or a `List`/`NodeList` with `items`) or parsed data.

    Raises DraftInputError when it is not such a list or an item is not an `rlinf.io` Node.
    """
    data = parse_yaml(source, what="Node list") if isinstance(source, (str, bytes)) else source
    if isinstance(data, Mapping) and isinstance(data.get("items"), list):
        data = data["items"]
    elif isinstance(data, Mapping) and data.get("kind") == "Node":
        data = [data]
    if data is None:
        data = []
    if not isinstance(data, list):
        raise DraftInputError("Node list must be a YAML list of Nodes or a List with `items`")
    nodes = []
    for index, item in enumerate(data):
        if not isinstance(item, Mapping) or not isinstance(item.get("metadata"), Mapping):
            raise DraftInputError(f"Node list item {index} is not a Node object (needs `metadata`)")
        kind, api = item.get("kind"), item.get("apiVersion")
        if (kind is not None and kind != "Node") or (api is not None and not str(api).startswith("rlinf.io/")):
            raise DraftInputError(f"Node list item {index} is a {api or '?'} {kind}, not an rlinf.io Node")
        if not isinstance(item["metadata"].get("name"), str) or not item["metadata"]["name"]:
            raise DraftInputError(f"Node list item {index} has no metadata.name")
        nodes.append(dict(item))
    return nodes
