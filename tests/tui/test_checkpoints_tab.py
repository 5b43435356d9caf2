"""The Job detail's Checkpoints tab and its resume key (issue 35 items 3 and 4), and GPU use by role in the Workers
tab (item 2). The tab shows what `rlark checkpoints` reads (a sandbox Pod writes a checkpoint tree in RLinf's
embodied layout, one step without its .metadata, and prints its resolved config); `u` shows the diff and asks, an
incomplete checkpoint only as a forced resume, and the resume is an Edit & Restart through flow/actions (refused
under --readonly). The Workers tab's GPU rows come from the usage topic's samples in the Snapshot."""

from __future__ import annotations

import dataclasses
import json
from types import MappingProxyType

import pytest
from tui_factories import ROLES, build_snapshot, job_dict

from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.flow import messages
from rlark_tui.flow.actions import Actions
from rlark_tui.flow.polls import ALL_KEY
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.telemetry.checkpoints import CheckpointRead, location
from rlark_tui.telemetry.sample import usage_sample
from rlark_tui.telemetry.usage import UsageState
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.checkpoints import CheckpointsView
from rlark_tui.widgets.workers import RoleGpuUse
from tests.checks import fixtures as fx
from tests.metrics.test_checkpoints import embodied
from tests.pilot import wait_for

NAME = "ckpt-tab"
SIZE = (120, 40)


def _job(out: str) -> dict:
    """A Pod that writes global_step_10, 20 and 30 (30 without its .metadata) and prints RLinf's resolved config."""
    job = fx.unschedulable_job(NAME)
    task = job["spec"]["tasks"][0]
    task["nodeSelector"] = {"kubernetes.io/hostname": "gpu-a3"}
    task["runScript"] = "cd /work\npython train_embodied_agent.py --config-name ppo runner.max_epochs=40\n"
    task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["resources"] = {}
    base = f"{out}/ppo/checkpoints"
    config = json.dumps(embodied(out), indent=2).replace("\n", "\\n")
    task["prepareScript"] = (
        f"for s in 10 20 30; do d={base}/global_step_$s/actor; mkdir -p $d/dcp_checkpoint $d/model_state_dict && "
        f"printf w > $d/dcp_checkpoint/__0_0.distcp && printf m > $d/dcp_checkpoint/.metadata && "
        f"printf f > $d/model_state_dict/full_weights.pt; done && rm {base}/global_step_30/actor/dcp_checkpoint/.metadata"
        f" && printf '{config}\\n' && sleep 300")
    return job


@pytest.fixture
def written(access, tmp_path):
    """The Job submitted; yields its checkpoint location."""
    Actions(access, state_dir=tmp_path / "state").submit(_job(str(tmp_path / "out")))
    try:
        yield f"{tmp_path / 'out'}/ppo/checkpoints"
    finally:
        try:
            access.delete(JOBS, NAME)
        except NotFound:
            pass


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def open_checkpoints(pilot, app) -> CheckpointsView:
    """The Job's detail, `p`, and ctrl+r until its Pod has written the tree (the tab reads once as it opens)."""
    await wait_for(pilot, lambda: app.index is not None and app.index.job(NAME) is not None, "the Job listed")
    app.post_message(messages.OpenJob(NAME))
    await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the Job's detail")
    await pilot.press("p")
    view = app.screen.query_one(CheckpointsView)

    async def listed() -> bool:
        if view.read is not None and len(view.read.found) == 3:
            return True
        if not app.screen._reading_checkpoints:
            await pilot.press("ctrl+r")
        return False

    for _ in range(120):
        if await listed():
            return view
        await pilot.pause(0.5)
    raise AssertionError(f"the three checkpoints were never listed:\n{view.shown_text()}")


async def test_the_tab_lists_checkpoints_and_u_resumes_from_the_selected_one(access, env, written):
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        view = await open_checkpoints(pilot, app)
        shown = view.shown_text()
        assert f"location: {written} (embodied, in Pod {NAME}-actor-0)" in shown
        assert "3 checkpoint(s), latest complete: global_step_20" in shown
        assert "incomplete: global_step_30 (missing actor/dcp_checkpoint/.metadata)" in shown
        lines = shown.splitlines()
        assert [line.split()[0] for line in lines[-3:]] == ["global_step_10", "global_step_20", "global_step_30"]
        assert lines[-3].endswith("complete") and lines[-2].endswith("complete (latest)")
        assert lines[-1].endswith("incomplete: missing actor/dcp_checkpoint/.metadata")
        assert view.selected.name == "global_step_20", "the cursor starts on the latest complete one"

        await pilot.press("down", "u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the forced-resume dialog")
        dialog = app.screen
        assert dialog.dangerous and dialog.title_text == f"Force resume {NAME} from incomplete global_step_30?"
        assert "Missing: actor/dcp_checkpoint/.metadata." in dialog.body_text
        await pilot.press("n")
        await wait_for(pilot, lambda: f"resume of {NAME} cancelled: the job was not changed" in notes(app),
                       "the cancel notice")

        await pilot.press("up", "u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the resume dialog")
        dialog = app.screen
        resume_dir = f"{written}/global_step_20"
        assert not dialog.dangerous and dialog.title_text == f"Resume {NAME} from global_step_20 (step 20)?"
        assert "Resume is an Edit & Restart" in dialog.body_text
        assert "-python train_embodied_agent.py --config-name ppo runner.max_epochs=40" in dialog.detail
        assert (f"+python train_embodied_agent.py --config-name ppo runner.max_epochs=40 "
                f"runner.resume_dir={resume_dir}") in dialog.detail
        assert "wandb-secret-value-123" not in dialog.detail
        await pilot.press("y")
        await wait_for(pilot, lambda: any(f"job {NAME} replaced and restarted from global_step_20" in n
                                          for n in notes(app)), "the resume's notice", show=notes)
    task = access.get(JOBS, NAME)["spec"]["tasks"][0]
    assert task["runScript"].rstrip("\n").endswith(f" runner.resume_dir={resume_dir}")


async def test_readonly_lists_but_refuses_the_resume_in_one_line(access, env, written):
    app = RlarkApp(access, readonly=True)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await open_checkpoints(pilot, app)
        assert app.screen.active_bindings["u"].binding.action == "refused('u')", "hidden: only the app's refusal"
        await pilot.press("u")
        await wait_for(pilot, lambda: f"read-only mode: refusing to resume job {NAME} (started with --readonly)"
                       in notes(app), "the read-only refusal", show=notes)
        assert not isinstance(app.screen, ConfirmScreen) and view.read is not None


async def test_u_on_a_finished_job_says_it_is_deleted_and_created_again(access, env, written, sandbox):
    """A Succeeded Job is terminal for the platform: the dialog says the resume re-creates it, and it does."""
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await open_checkpoints(pilot, app)
        old = sandbox.store.get("jobs", NAME)
        sandbox.store.update("jobs", {**old, "status": {**old.get("status", {}), "phase": "Succeeded"}},
                             subresource="status")
        await wait_for(pilot, lambda: app.index.job(NAME).phase == "Succeeded", "the Job listed as Succeeded")
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the resume dialog")
        assert "The Job is Succeeded: the platform treats a finished Job as done" in app.screen.body_text
        assert "deletes it and, once it and its Tasks and Pods are gone, creates it again" in app.screen.body_text
        await pilot.press("y")
        await wait_for(pilot, lambda: any(f"job {NAME} deleted and created again from global_step_20" in n
                                          for n in notes(app)), "the resume's notice", show=notes)
    new = access.get(JOBS, NAME)
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["tasks"][0]["runScript"].rstrip("\n").endswith(f" runner.resume_dir={written}/global_step_20")


@pytest.fixture
def unstarted(access, tmp_path):
    """A Job whose Pod never starts: no Header Pod yet, or one with no log."""
    Actions(access, state_dir=tmp_path / "state").submit(fx.unschedulable_job("ckpt-none"))
    yield "ckpt-none"
    access.delete(JOBS, "ckpt-none")


async def test_a_job_that_never_started_says_why_in_one_line(access, env, unstarted):
    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.index is not None and app.index.job("ckpt-none") is not None, "the Job")
        app.post_message(messages.OpenJob("ckpt-none", "checkpoints"))
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the Job's detail")
        status = app.screen.query_one("#checkpoints-status")
        await wait_for(pilot, lambda: status.has_class("-error"), "the read's error")
        text = str(status.render())
        assert "\n" not in text and text.startswith("checkpoints: ") and "ckpt-none" in text, text
        await pilot.press("u")
        assert any("no checkpoint selected" in n for n in notes(app)) and not isinstance(app.screen, ConfirmScreen)


def _usage(snapshot, utils: dict[str, float]) -> UsageState:
    """Samples of each role's Pod, its one GPU at `utils[task]` percent."""
    samples = {}
    for key, pod in snapshot.pods.items():
        task = pod["metadata"]["labels"]["rlark.io/task-name"].rsplit("-", 1)[1]
        if task in utils:
            samples[key] = usage_sample(key, 1.0, ((0, "GPU-0", utils[task], 30 * 1024.0, 81559.0),))
    return UsageState(samples=MappingProxyType(samples))


async def test_gpu_use_by_role_keeps_each_role_on_its_row_and_its_numbers_under_their_headers(post_snapshot):
    """Issue 33, a sixteenth round (a Job author's role name, Unicode that forges a table): the Workers tab's GPU
    use by role padded each cell by its length and kept a line break (`clean`), so a role named with 8 wide
    characters moved its numbers under the next headers, and one named 'Actor<LF>Rollout  1  8  99/99/99% …'
    added a forged row. Each cell is one line (sinks.one_line), padded by the columns it shows (sinks.pad)."""
    from rlark_tui.text.sinks import cell_width

    forged = "Rollout           1     8     99/99/99%          80/80/80Gi"
    roles = ((*ROLES[0][:2], "作业作业作业作业", *ROLES[0][3:]), (*ROLES[1][:2], f"R\n{forged}", *ROLES[1][3:]))
    plain = build_snapshot([job_dict("demo-ppo", roles=roles)])
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await post_snapshot(pilot, dataclasses.replace(plain, usage={ALL_KEY: _usage(plain, {"actor": 93,
                                                                                              "rollout": 4})}))
        app.post_message(messages.OpenJob("demo-ppo"))
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen.query_one(
            RoleGpuUse).display, "the Job's GPU use by role")
        header, *lines = str(app.screen.query_one(RoleGpuUse).render()).splitlines()
        assert [line for line in lines if line.startswith("Rollout")] == [], lines
        wide = next(line for line in lines if line.startswith("作业"))
        assert cell_width(wide[:wide.index(" 1 ") + 1]) == header.index("PODS"), (header, wide)


async def test_workers_tab_shows_gpu_use_by_role_and_the_imbalance(post_snapshot):
    jobs = [job_dict("demo-ppo")]
    plain = build_snapshot(jobs)
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await post_snapshot(pilot, plain)
        app.post_message(messages.OpenJob("demo-ppo"))
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the Job's detail")
        gpu = app.screen.query_one(RoleGpuUse)
        assert not gpu.display, "no GPU rows before the usage topic sampled a Pod"
        sampled = dataclasses.replace(plain, usage={ALL_KEY: _usage(plain, {"actor": 93, "rollout": 4})})
        await post_snapshot(pilot, sampled)
        assert gpu.display
        lines = str(gpu.render()).splitlines()
        assert lines[0].split() == ["ROLE", "PODS", "GPUS", "GPU%", "MIN/MEAN/MAX", "GPU-MEM", "MIN/MEAN/MAX"]
        assert lines[1].split() == ["Actor", "1", "1", "93/93/93%", "30/30/30Gi"]
        assert lines[2].split() == ["Rollout", "1", "1", "4/4/4%", "30/30/30Gi"]
        assert lines[3].split() == ["Environment", "1", "0", "-", "-"]
        assert lines[4] == "imbalance: Rollout GPUs at 4 % while Actor at 93 %"
        where = location(embodied("/out"))
        app.screen.post_message(messages.CheckpointsLoaded("demo-ppo", CheckpointRead(
            "demo-ppo", where, "demo-ppo-actor-0", (), {"actor,env": "0-3", "rollout": "4-7"})))
        await wait_for(pilot, lambda: "(placement: actor,env 0-3, rollout 4-7)" in str(gpu.render()),
                       "the note naming the placement", show=lambda app: str(gpu.render()))
        balanced = dataclasses.replace(plain, usage={ALL_KEY: _usage(plain, {"actor": 60, "rollout": 50})})
        await post_snapshot(pilot, balanced)
        assert "imbalance" not in str(gpu.render())
