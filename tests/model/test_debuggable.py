"""A debuggable Job (issue 34 item 6): the draft's `debuggable: true` survives a dump and a load, renders
SYS_PTRACE on every container and RAY_DASHBOARD_ENABLE_PROFILING=1 on the Header role only, into a Job the
platform's real CRD schema accepts and keeps whole (nothing of it pruned), and comes back from the Job (Edit,
Clone)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from wizard.helpers import DATA, data_draft

from model.jobschema import assert_valid_job, crd_validator
from rlark_tui.jobspec.build import build_job, parse_nodes
from rlark_tui.jobspec.clone import draft_of
from rlark_tui.jobspec.draft import dump_draft, load_draft

PROFILING = {"name": "RAY_DASHBOARD_ENABLE_PROFILING", "value": "1"}


@pytest.fixture(scope="module")
def nodes():
    return parse_nodes((DATA / "nodes.yaml").read_text())


def containers(task: dict) -> list[dict]:
    return task["kubernetes"]["workload"]["template"]["spec"]["containers"]


def pruned(value, schema: dict, path: str) -> list[str]:
    """The paths in `value` a structural schema prunes: fields it does not declare."""
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return []
        declared, extra = schema.get("properties") or {}, schema.get("additionalProperties")
        found = []
        for key, item in value.items():
            sub = declared.get(key, extra if isinstance(extra, dict) else None)
            found += [f"{path}.{key}"] if sub is None else pruned(item, sub, f"{path}.{key}")
        return found
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [p for index, item in enumerate(value) for p in pruned(item, schema["items"], f"{path}[{index}]")]
    return []


def test_draft_round_trip_keeps_debuggable_and_leaves_it_out_when_off():
    draft = replace(data_draft(), debuggable=True)
    text = dump_draft(draft)
    assert "\ndebuggable: true\n" in text
    loaded, findings = load_draft(text)
    assert findings == [] and loaded == draft
    assert "debuggable" not in dump_draft(data_draft()) and load_draft(dump_draft(data_draft()))[0].debuggable is False
    _, wrong = load_draft(text.replace("debuggable: true", "debuggable: yes please"))
    assert [(f.field, f.message) for f in wrong] == [("debuggable", "must be true or false, not text")]


def test_debuggable_job_passes_the_real_crd_schema_and_nothing_is_pruned(nodes):
    result = build_job(replace(data_draft(), debuggable=True), nodes)
    assert result.ok, result.findings
    manifest = result.manifest
    assert_valid_job(manifest)
    assert pruned(manifest["spec"], crd_validator("jobs").schema["properties"]["spec"], "spec") == []
    tasks = manifest["spec"]["tasks"]
    for task in tasks:
        for container in containers(task):
            assert container["securityContext"] == {"capabilities": {"add": ["SYS_PTRACE"]}}
        env = containers(task)[0]["env"]
        assert (PROFILING in env) == bool(task.get("head")), task["name"]
    head_env = containers(next(t for t in tasks if t.get("head")))[0]["env"]
    assert [e["name"] for e in head_env].count(PROFILING["name"]) == 1

    plain = build_job(data_draft(), nodes).manifest
    assert all("securityContext" not in c and PROFILING not in c["env"]
               for task in plain["spec"]["tasks"] for c in containers(task))


def test_header_env_of_its_own_is_replaced_once_and_warned(nodes):
    draft = replace(data_draft(), debuggable=True)
    header = draft.header_index()
    roles = list(draft.roles)
    roles[header] = replace(roles[header], env={**roles[header].env, "RAY_DASHBOARD_ENABLE_PROFILING": "0"})
    result = build_job(replace(draft, roles=tuple(roles)), nodes)
    assert_valid_job(result.manifest)
    head = next(t for t in result.manifest["spec"]["tasks"] if t.get("head"))
    assert [e for e in containers(head)[0]["env"] if e["name"] == PROFILING["name"]] == [PROFILING]
    assert [(f.level, f.message) for f in result.findings if "PROFILING" in f.field] == [
        ("warning", "is '0' here, but a debuggable Job sets it to 1 on the Header role")]


def test_edit_and_clone_get_the_option_back(nodes):
    draft = replace(data_draft(), debuggable=True)
    recovered = draft_of(build_job(draft, nodes).manifest).draft
    assert recovered.debuggable is True
    assert all("RAY_DASHBOARD_ENABLE_PROFILING" not in role.env for role in recovered.roles)
    assert build_job(recovered, nodes).manifest["spec"] == build_job(draft, nodes).manifest["spec"]
    assert draft_of(build_job(data_draft(), nodes).manifest).draft.debuggable is False
