"""Local checks of a ready `rlinf.io/v1alpha1` Job manifest (not a draft) against live Nodes and Jobs.

Pure: used by `rlark submit -f` for Job manifests and for each template of a Workflow manifest.
"""

from __future__ import annotations

from collections.abc import Mapping

from rlark_tui.jobspec.findings import Finding, error, ordered, warning
from rlark_tui.model.objects import Job
from rlark_tui.model.placement import matching_nodes


def manifest_findings(manifest: Mapping, nodes: list[dict], jobs: list[dict], where: str = "") -> list[Finding]:
    """Findings of one Job manifest; `where` prefixes every field path (a Workflow template's position)."""
    job = Job(manifest)
    findings: list[Finding] = []
    if not job.name:
        findings.append(error(f"{where}metadata.name", "a Job needs a name"))
    elif any(Job(j).name == job.name for j in jobs):
        findings.append(error(f"{where}metadata.name", f"a Job named {job.name} already exists"))
    metadata = manifest.get("metadata")
    for field in ("labels", "annotations"):
        value = metadata.get(field) if isinstance(metadata, Mapping) else None
        if value is not None and not isinstance(value, Mapping):
            findings.append(error(f"{where}metadata.{field}", "must be a mapping of name: value"))
    if not job.tasks:
        findings.append(error(f"{where}spec.tasks", "a Job needs at least one task (role)"))
    heads = [t for t in job.tasks if t.head]
    if not heads and job.tasks:
        findings.append(warning(f"{where}spec.tasks", "no task has head: true, so no Ray head starts and no run "
                                                      "script runs"))
    if len(heads) > 1:
        findings.append(warning(f"{where}spec.tasks", "several tasks have head: true; the platform uses the first"))
    for index, task in enumerate(job.tasks):
        path = f"{where}spec.tasks[{index}]"
        if not task.node_selector:
            findings.append(error(f"{path}.nodeSelector", "empty selector: the Task lands in namespace `default` "
                                                          "and never runs"))
        elif not matching_nodes(task.node_selector, nodes):
            findings.append(error(f"{path}.nodeSelector", "matches no Node"))
        if not task.has_main_container:
            findings.append(warning(f"{path}.kubernetes.workload.template.spec.containers",
                                    "no container named `main`: no Ray wrapper, env or logs"))
        elif not task.image:
            findings.append(error(f"{path}.image", "the `main` container has no image"))
    return ordered(findings)
