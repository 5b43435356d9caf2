"""The wizard's Debuggable option (issue 34 item 6): off by default and explained beside it and under `?`; turned
on, the preview and the Job the sandbox creates have SYS_PTRACE on every container and
RAY_DASHBOARD_ENABLE_PROFILING=1 on the Header role."""

from __future__ import annotations

import uuid

from rlark_tui.cluster.kinds import JOBS
from rlark_tui.screens.help import HelpScreen
from rlark_tui.screens.job_list import JobListScreen
from tests.pilot import press
from wizard.helpers import SIZE, base_draft, message, new_app, open_wizard, settle, until

PTRACE = {"capabilities": {"add": ["SYS_PTRACE"]}}


async def test_debuggable_toggled_in_step_3_reaches_the_submitted_job(access, state, cleanup_jobs):
    app = new_app(access)
    name = f"wiz-debug-{uuid.uuid4().hex[:6]}"
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_wizard(pilot, base_draft(name))
        await screen.load(screen.draft, step=3)
        await settle(pilot)
        assert screen.draft.debuggable is False
        assert "on lets rlark take every rank's stack" in message(screen, "debuggable")

        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
        help_text = " ".join(str(app.screen.query_one("#help-text").render()).split())
        assert "Debuggable (step 3, off by default): on, every container gets securityContext.capabilities.add " \
               "[SYS_PTRACE]" in help_text and "RAY_DASHBOARD_ENABLE_PROFILING=1" in help_text
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, what="back in the wizard")

        screen.query_one("#w-debuggable").focus()
        await press(pilot, "enter", "down", "enter")
        await settle(pilot)
        assert screen.draft.debuggable is True
        assert message(screen, "debuggable").startswith("adds SYS_PTRACE to every container")
        await press(pilot, "ctrl+n")
        await settle(pilot)
        assert screen.step == 4, str(screen.query_one("#wizard-status").render())
        assert screen.preview_yaml.count("- SYS_PTRACE") == 3 and "RAY_DASHBOARD_ENABLE_PROFILING" in screen.preview_yaml

        cleanup_jobs.append(name)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(app.screen, JobListScreen), what="back on the job list")

    tasks = access.get(JOBS, name)["spec"]["tasks"]
    for task in tasks:
        container = task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
        assert container["securityContext"] == PTRACE, task["name"]
        profiling = [e for e in container["env"] if e["name"] == "RAY_DASHBOARD_ENABLE_PROFILING"]
        assert profiling == ([{"name": "RAY_DASHBOARD_ENABLE_PROFILING", "value": "1"}] if task.get("head") else [])
