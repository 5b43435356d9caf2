"""The platform's Workflow controller in miniature (apps/rlark/pkg/controllermanager/workflow): a Workflow's
templates become Jobs `<wf>-<template>` labelled `rlinf.io/workflow`, each once its dependencies succeeded.

Pure: `next_state` maps a Workflow and the Jobs that exist to its next status and the Jobs to create.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from rlark_tui.jobspec.workflow import WORKFLOW_LABEL, dag_problem, dependencies, templates

TERMINAL = ("Succeeded", "Failed")


def child_job(workflow: Mapping, template: Mapping) -> dict:
    """The Job the controller creates for one template (controller owner reference to the Workflow)."""
    meta = workflow["metadata"]
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
            "metadata": {"name": f"{meta['name']}-{template.get('name', '')}",
                         "labels": {WORKFLOW_LABEL: meta["name"]},
                         "ownerReferences": [{"apiVersion": "rlinf.io/v1alpha1", "kind": "Workflow",
                                              "name": meta["name"], "uid": meta.get("uid", ""),
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": copy.deepcopy(template.get("spec") or {})}


def next_state(workflow: Mapping, jobs: Mapping[str, Mapping], now: str) -> tuple[dict | None, list[dict]]:
    """(the new `status`, or None when nothing changed; Jobs to create) for one reconcile of `workflow`.

    `jobs` maps Job name -> Job. As the platform: a terminal Workflow is left alone; an invalid DAG fails the
    reconcile before any status is written; init (Pending, one entry per template) and start (Running) happen
    in the first pass; entries follow their Job's phase; any Failed fails the Workflow, all Succeeded
    succeeds it."""
    status = copy.deepcopy(dict(workflow.get("status") or {}))
    phase = status.get("phase") or ""
    listed = templates(workflow)
    if phase in TERMINAL or dag_problem(workflow):
        return None, []
    name = workflow["metadata"]["name"]
    changed = False
    if not phase:
        status["phase"], phase, changed = "Pending", "Pending", True
        if status.get("jobs") is None:
            status["jobs"] = [{"name": t.get("name", "")} for t in listed]
    if phase == "Pending":
        status["phase"], phase, changed = "Running", "Running", True
        status["startTime"] = now
    entries = {e.get("name"): e for e in status.get("jobs") or []}

    def sync(entry: dict | None, job_phase: str) -> None:
        nonlocal changed
        if entry is not None and job_phase and job_phase != entry.get("phase", ""):
            entry["phase"], entry["message"], changed = job_phase, "", True

    for template in listed:
        entry = entries.get(template.get("name"))
        job = jobs.get(f"{name}-{template.get('name', '')}")
        if entry is not None and entry.get("phase") and job is not None:
            sync(entry, str((job.get("status") or {}).get("phase") or ""))
    succeeded = {t.get("name") for t in listed if (entries.get(t.get("name")) or {}).get("phase") == "Succeeded"}
    create = []
    for template in listed:
        entry = entries.get(template.get("name"))
        waiting = [d for d in dependencies(template) if d not in succeeded]
        if template.get("name") in succeeded or waiting or (entry is not None and entry.get("phase")):
            continue
        job = jobs.get(f"{name}-{template.get('name', '')}")
        if job is None:
            create.append(child_job(workflow, template))
            sync(entry, "Pending")
        else:
            sync(entry, str((job.get("status") or {}).get("phase") or ""))
    phases = [e.get("phase", "") for e in status.get("jobs") or []]
    if "Failed" in phases or (phases and all(p == "Succeeded" for p in phases)):
        status["phase"] = "Failed" if "Failed" in phases else "Succeeded"
        status["endTime"] = now
        changed = True
    return (status if changed else None), create
