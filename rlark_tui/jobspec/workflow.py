"""Workflows (`workflows.rlinf.io`): each template's Job and phase in dependency order, why a template still
waits, and local checks of a Workflow manifest before it is sent. Pure.

Facts (rlark-platform.md §1, apps/rlark/pkg/controllermanager/workflow): Job `<wf>-<template>`, labelled
`rlinf.io/workflow=<wf>`, is created once every dependency's Job is Succeeded, never twice; a dependency must
name a template listed before it, or the controller rejects the whole Workflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rlark_tui.jobspec.findings import Finding, error, ordered, warning
from rlark_tui.jobspec.manifest import manifest_findings
from rlark_tui.model.naming import DNS_LABEL_MAX
from rlark_tui.model.objects import Job, dig
from rlark_tui.text.sinks import one_line

WORKFLOW_LABEL = "rlinf.io/workflow"
NEVER_SUCCEEDS = ("by the platform's code a StatefulSet Job never reaches Succeeded (rlark-platform.md §6.2), "
                  "so this waits until someone marks it done")


@dataclass(frozen=True)
class TemplateState:
    """One template: its Job's name and phase ("" = not created), its layer (0 = no dependencies), and why
    it waits ("" when its Job exists)."""

    name: str
    job: str
    dependencies: tuple[str, ...]
    layer: int
    phase: str
    waiting: str


def templates(workflow: Mapping) -> list[Mapping]:
    found = dig(workflow, "spec", "jobTemplates", default=[])
    return [t for t in found if isinstance(t, Mapping)] if isinstance(found, list) else []


def dependencies(template: Mapping) -> tuple[str, ...]:
    deps = template.get("dependencies")
    return tuple(str(d) for d in deps) if isinstance(deps, list) else ()


def dag_problem(workflow: Mapping) -> str:
    """The controller's rejection ("job X depends on unknown job Y"), or "" when its DAG is valid."""
    seen: set[str] = set()
    for template in templates(workflow):
        name = str(template.get("name", ""))
        seen.add(name)
        for dep in dependencies(template):
            if dep not in seen:
                return f"job {name!r} depends on unknown job {dep!r}"
    return ""


def _stateful(template: Mapping) -> bool:
    return any(t.workload_kind in ("", "StatefulSet") for t in Job({"spec": template.get("spec")}).tasks)


def template_states(workflow: Mapping, jobs: Mapping[str, Mapping]) -> list[TemplateState]:
    """Every template in dependency order (by layer, then as listed), with its Job and why it waits."""
    name = str(dig(workflow, "metadata", "name", default=""))
    phase = str(dig(workflow, "status", "phase", default="") or "")
    rejected = dag_problem(workflow)
    listed = templates(workflow)
    by_name = {str(t.get("name", "")): t for t in listed}
    layers: dict[str, int] = {}
    states = []
    for template in listed:
        tname = str(template.get("name", ""))
        deps = dependencies(template)
        layers[tname] = 1 + max((layers.get(d, 0) for d in deps), default=-1)
        job_name = f"{name}-{tname}"
        job = jobs.get(job_name)
        job_phase = str(dig(job, "status", "phase", default="") or "Pending") if job is not None else ""
        states.append(TemplateState(tname, job_name, deps, layers[tname], job_phase,
                                    "" if job is not None else _why(rejected, phase, name, deps, jobs, by_name)))
    order = {s.name: i for i, s in enumerate(states)}
    return sorted(states, key=lambda s: (s.layer, order[s.name]))


NAMED_WAITS = 5
"""The dependencies a template's waiting names; the rest are counted (a Workflow's author sets how many: one
template depending on 70,000 was a 2.5 MB table cell)."""


def _why(rejected: str, phase: str, workflow: str, deps: tuple[str, ...], jobs: Mapping[str, Mapping],
         by_name: Mapping[str, Mapping]) -> str:
    if rejected:
        return f"the controller rejects this Workflow: {rejected}"
    if phase in ("Succeeded", "Failed"):
        return f"the Workflow is {phase}: no more Jobs are created"
    blocking: list[str] = []
    waiting = 0
    for dep in deps:
        job = jobs.get(f"{workflow}-{dep}")
        dep_phase = str(dig(job, "status", "phase", default="") or "Pending") if job is not None else ""
        if dep_phase == "Succeeded":
            continue
        waiting += 1
        if len(blocking) >= NAMED_WAITS:
            continue
        if not dep_phase:
            blocking.append(f"{dep} (its Job is not created yet)")
        else:
            note = f"; {NEVER_SUCCEEDS}" if _stateful(by_name.get(dep, {})) and dep_phase != "Failed" else ""
            blocking.append(f"{dep} (Job {workflow}-{dep} is {dep_phase}; it must reach Succeeded{note})")
    if blocking:
        more = f" and {waiting - len(blocking):,} more" if waiting > len(blocking) else ""
        return "waits for " + ", ".join(blocking) + more
    return "due: the controller creates its Job on its next pass"


def workflow_findings(manifest: Mapping, nodes: list[dict], jobs: list[dict]) -> list[Finding]:
    """What would go wrong with this Workflow, before it is sent: its name, each template's name and
    dependencies (unknown, forward, itself), the Job names it creates, and every template's Job spec."""
    findings: list[Finding] = []
    name = str(dig(manifest, "metadata", "name", default="") or "")
    if not name:
        findings.append(error("metadata.name", "a Workflow needs a name"))
    listed = dig(manifest, "spec", "jobTemplates", default=None)
    if not isinstance(listed, list) or not listed:
        findings.append(error("spec.jobTemplates", "a Workflow needs at least one job template"))
        return ordered(findings)
    existing = {Job(j).name for j in jobs}
    seen: set[str] = set()
    # each template's dependencies read once: asking every template of every other made 4,000 templates 13 s
    needs = [dependencies(t) if isinstance(t, Mapping) else () for t in listed]
    depended = {dep for deps in needs for dep in deps}
    last = {t["name"]: index for index, t in enumerate(listed)
            if isinstance(t, Mapping) and isinstance(t.get("name"), str)}
    for index, template in enumerate(listed):
        path = f"spec.jobTemplates[{index}]"
        if not isinstance(template, Mapping):
            findings.append(error(path, "must be a mapping with name, dependencies and spec"))
            continue
        tname = str(template.get("name", "") or "")
        if not tname:
            findings.append(error(f"{path}.name", "a job template needs a name"))
        elif tname in seen:
            findings.append(error(f"{path}.name", f"two templates are named {tname!r}"))
        for dep in needs[index]:
            if dep == tname:
                findings.append(error(f"{path}.dependencies", f"{tname!r} depends on itself: it would never start"))
            elif dep not in seen:
                later = last.get(dep, -1) > index
                findings.append(error(f"{path}.dependencies", (
                    f"depends on {dep!r}, listed after it: the controller rejects the whole Workflow "
                    f"(\"job {tname!r} depends on unknown job {dep!r}\"); list {dep!r} first") if later else (
                    f"depends on unknown job {dep!r}: the controller rejects the whole Workflow")))
        seen.add(tname)
        job_name = f"{name}-{tname}"
        if len(job_name) > DNS_LABEL_MAX:
            findings.append(error(f"{path}.name", f"Job name {job_name!r} is longer than {DNS_LABEL_MAX}"))
        child = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": job_name},
                 "spec": template.get("spec") if isinstance(template.get("spec"), Mapping) else {}}
        for finding in manifest_findings(child, nodes, [], where=f"{path}."):
            findings.append(finding)
        if job_name in existing:
            findings.append(error(f"{path}.name", f"a Job named {job_name} already exists: the controller would "
                                                  "take it as this template's Job instead of creating one"))
        if tname in depended and _stateful(template):
            findings.append(warning(f"{path}.spec", f"templates depending on {tname!r} start only when its Job "
                                                    f"is Succeeded; {NEVER_SUCCEEDS}"))
    return ordered(findings)


_TEMPLATE = """\
    - name: {name}{deps}
      spec:
        tasks:
          - name: main
            head: true
            role: Actor
            agentType: Kubernetes
            nodeSelector: {{kubernetes.io/hostname: NODE}}   # a Node from `rlark get nodes -A`
            runScript: "echo {name}"
            kubernetes:
              workload:
                kind: Job
                replicas: 1
                template:
                  spec:
                    containers:
                      - name: main
                        image: rlinf/rlinf:latest
"""
NEW_WORKFLOW = ("""\
# A Workflow: each job template becomes Job <workflow>-<template> once its dependencies Succeeded.
# Checked as `rlark submit -f` checks it; nothing is sent if you save it unchanged or it has errors.
apiVersion: rlinf.io/v1alpha1
kind: Workflow
metadata:
  name: my-workflow
spec:
  jobTemplates:
""" + _TEMPLATE.format(name="prepare", deps="") + _TEMPLATE.format(name="train", deps="\n      dependencies: [prepare]"))
"""What `n` in `:workflows` opens in $EDITOR the first time (later: the draft kept from the last try)."""


def delete_consequences(name: str, jobs: list[str]) -> tuple[str, str]:
    """(title, body) before deleting a Workflow. The platform's controller creates each Job with a controller
    owner reference to its Workflow (controllermanager/workflow/sync.go SetControllerReference), so deleting the
    Workflow lets garbage collection delete those Jobs, and with them their Tasks, Pods, head Service and PVCs."""
    name, jobs = one_line(name), [one_line(job) for job in jobs[:8]] + jobs[8:]  # the control plane's names
    listed = ", ".join(jobs[:8]) + (f" and {len(jobs) - 8} more" if len(jobs) > 8 else "")
    body = ("Deletes the Workflow. " + (
        f"The {len(jobs)} Job(s) it created ({listed}) are owned by it and are deleted with it (garbage "
        "collection), with their Tasks, Pods, head Services and task PVCs; their running processes end. "
        if jobs else "It has created no Job yet. ") + "Templates not yet started are never created. "
        "This cannot be undone: to run again, submit the Workflow again.")
    return f"Delete Workflow {name}?", body
