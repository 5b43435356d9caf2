"""The Job detail's Diagnosis card (issue 34 item 3): the Overview shows the run's first failure in one line, from
the `diagnosis` topic's result in the Snapshot (the screen reads nothing itself)."""

from __future__ import annotations

import dataclasses

from tui_factories import build_snapshot, job_dict

from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.telemetry import diagnosis as d
from rlark_tui.tui.app import RlarkApp
from tests.raydebug.recorded import sigsegv_inputs

SIZE = (120, 40)


def _card(app) -> str:
    return str(app.screen.query_one("#diagnosis-card").render())


async def test_the_overview_card_shows_the_first_failure_once_read(post_snapshot):
    jobs = [job_dict("demo-ppo")]
    crashed = d.diagnose(sigsegv_inputs(job="demo-ppo"))
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await post_snapshot(pilot, build_snapshot(jobs))
        await pilot.press("d")
        assert isinstance(app.screen, JobDetailScreen)
        assert "Diagnosis" in _card(app) and "reading the Pods, Ray and the Header log" in _card(app)
        await post_snapshot(pilot, dataclasses.replace(build_snapshot(jobs),
                                                       diagnosis={"demo-ppo": d.Diagnosis("demo-ppo", None)}))
        assert "no failure found" in _card(app)
        await post_snapshot(pilot, dataclasses.replace(build_snapshot(jobs), diagnosis={"demo-ppo": crashed}))
        card = _card(app)
        assert "First failure: ActorGroup:1 failed first (signal): Fatal Python error: Segmentation fault" in card
        assert "rlark diagnose demo-ppo shows its evidence and the timeline" in card
        assert app.screen.query_one("#diagnosis-card").has_class("-failed")
