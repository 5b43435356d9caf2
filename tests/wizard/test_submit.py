"""Each job type built end to end in the wizard against the sandbox: the created Job equals `rlark draft render`
of the same draft (and `render_job`), carries the submit annotations of the one submit path, and the list
selects it with the run-check hint. Read-only mode refuses Submit but allows the server dry run.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import replace

import yaml

from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.commands.draft import write_rendered
from rlark_tui.jobspec.draft import dump_draft
from rlark_tui.jobspec.render import render_job
from rlark_tui.model.submission import (
    SUBMITTED_SPEC_ANNOTATION,
    SUBMITTED_SPEC_SHA256_ANNOTATION,
    canonical_spec,
    spec_sha256,
)
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.screens.wizard import WizardScreen
from tests.pilot import press
from wizard.helpers import IMAGE, SIZE, base_draft, new_app, open_wizard, settle, until

# job type → key presses from RL in the type list, [(role name, cluster, host, gpu)], header, domain
TYPES = {
    "rl": (0, [("Actor", "rlark-gpu-a", "gpu-a3", 1), ("Rollout", "rlark-gpu-a", "gpu-a2", 1),
               ("Environment", "rlark-edge-b", "edge-b2", 0)], 0, "demo-net"),
    "data-collection": (1, [("Environment", "rlark-edge-b", "edge-b2", 0)], 0, ""),
    "evaluation": (2, [("Rollout", "rlark-gpu-a", "gpu-a2", 1), ("Environment", "rlark-edge-b", "edge-b2", 0)],
                   0, "demo-net"),
    "custom": (3, [("Learner", "rlark-gpu-a", "gpu-a3", 2)], 0, ""),
}


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


async def build_in_wizard(pilot, screen, job_type: str, name: str, type_name: bool = True) -> None:
    """Fill the four steps the way a user does: keys for the type, name, roles and Next; choices in Selects."""
    downs, roles, header, domain = TYPES[job_type]
    if type_name:
        await press(pilot, *name)
    else:
        screen.query_one("#w-name").value = name
    screen.query_one("#w-type").focus()
    await press(pilot, "enter", *(["down"] * downs), "enter")
    await settle(pilot)
    assert screen.draft.type == job_type
    if job_type == "custom":
        assert screen.draft.roles == ()
        assert "Job type Custom: roles set to its presets (none" in str(screen.query_one("#wizard-status").render())
        screen.query_one("#add-role").focus()
        await press(pilot, "enter")
        await settle(pilot)
        await press(pilot, *(["backspace"] * len("New role")), *roles[0][0])
        await settle(pilot)
        assert str(screen.query_one("#task-0").render()) == "task: learner · Actor"
    assert [r.name for r in screen.draft.roles] == [r[0] for r in roles]
    screen.query_one("#w-header").value = header
    await settle(pilot)
    await press(pilot, "ctrl+n")
    await settle(pilot)
    assert screen.step == 2
    for index, (_, cluster, host, gpu) in enumerate(roles):
        screen.query_one("#w-role-pick").value = index
        await settle(pilot)
        screen.query_one("#w-cluster").value = cluster
        await settle(pilot)
        screen.query_one("#w-label-pick").value = f"kubernetes.io/hostname={host}"
        await settle(pilot)
        assert screen.draft.roles[index].selector == {"kubernetes.io/hostname": host}
        table = screen.query_one("#w-matches")
        assert [str(table.get_row_at(i)[0]) for i in range(table.row_count)] == [host]
        assert "Replicas (read-only) = matched Nodes: 1" in str(screen.query_one("#w-match-summary").render())
        screen.query_one("#w-gpu").value = str(gpu)
        screen.query_one("#w-image").value = IMAGE
        await settle(pilot)
    await press(pilot, "ctrl+n")
    await settle(pilot)
    assert screen.step == 3, str(screen.query_one("#wizard-status").render())
    if domain:
        screen.query_one("#w-domain").value = domain
    screen.query_one("#w-runScript").text = "cd /workspace && python train.py"
    screen.query_one("#w-record-runId").value = f"{name}-001"
    await settle(pilot)
    await press(pilot, "ctrl+n")
    await settle(pilot)
    assert screen.step == 4, str(screen.query_one("#wizard-status").render())


async def submit_and_check(pilot, screen, access, state, name: str, cleanup: list[str]) -> None:
    app = pilot.app
    draft = screen.draft
    await pilot.press("ctrl+t")
    await until(pilot, lambda: "Dry run: the server accepts" in str(screen.query_one("#w-result").render()),
                what="the dry run")
    try:
        access.get(JOBS, name)
        raise AssertionError("the dry run created the Job")
    except NotFound:
        pass
    cleanup.append(name)
    await pilot.press("ctrl+g")
    await until(pilot, lambda: isinstance(app.screen, JobListScreen), what="back on the job list")
    await until(pilot, lambda: app.screen.table.selected_key == name, what="the new Job selected")
    hint = next(m for m in notifications(app) if m.startswith(f"Job {name} created"))
    assert "`Running` only means" in hint and "press `c`" in hint

    job = access.get(JOBS, name)
    nodes = access.nodes()
    expected = render_job(draft, nodes)
    out, err = io.StringIO(), io.StringIO()
    assert write_rendered(dump_draft(draft), nodes, stdout=out, stderr=err) == 0, err.getvalue()
    rendered = yaml.safe_load(out.getvalue())
    assert rendered == expected
    assert job["spec"] == expected["spec"]
    annotations = job["metadata"]["annotations"]
    for key, value in expected["metadata"]["annotations"].items():
        assert annotations[key] == value
    assert annotations[SUBMITTED_SPEC_ANNOTATION] == canonical_spec(expected["spec"])
    assert annotations[SUBMITTED_SPEC_SHA256_ANNOTATION] == spec_sha256(expected["spec"])
    saved = list((state / "submitted").glob(f"{name}-*.yaml"))
    assert len(saved) == 1 and spec_sha256(expected["spec"])[:12] in saved[0].name
    assert not list((state / "drafts").glob("wizard-autosave*"))


async def test_rl_job_end_to_end(access, state, cleanup_jobs):
    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot)
        name = f"wiz-rl-{uuid.uuid4().hex[:6]}"
        await build_in_wizard(pilot, screen, "rl", name)
        assert yaml.safe_load(screen.preview_yaml) == render_job(screen.draft, access.nodes())
        await submit_and_check(pilot, screen, access, state, name, cleanup_jobs)


async def test_other_job_types_end_to_end(access, state, cleanup_jobs):
    app = new_app(access)
    async with app.run_test(size=SIZE) as pilot:
        for job_type in ("data-collection", "evaluation", "custom"):
            screen = await open_wizard(pilot)
            name = f"wiz-{job_type[:4]}-{uuid.uuid4().hex[:6]}"
            await build_in_wizard(pilot, screen, job_type, name, type_name=False)
            await submit_and_check(pilot, screen, access, state, name, cleanup_jobs)


async def test_read_only_refuses_submit_but_allows_dry_run(access, state):
    app = new_app(access, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        name = f"wiz-ro-{uuid.uuid4().hex[:6]}"
        screen = await open_wizard(pilot, replace(base_draft(name)))
        await screen.load(screen.draft, step=4)
        await settle(pilot)
        assert str(screen.query_one("#submit").label) == "Submit refused: read-only"
        await press(pilot, "ctrl+g")
        await settle(pilot)
        assert "read-only mode: Submit refused" in str(screen.query_one("#w-result").render())
        await pilot.press("ctrl+t")
        await until(pilot, lambda: "Dry run: the server accepts" in str(screen.query_one("#w-result").render()),
                    what="the dry run")
        assert isinstance(app.screen, WizardScreen)
        try:
            access.get(JOBS, name)
            raise AssertionError("read-only mode created the Job")
        except NotFound:
            pass
