"""No invented route: the TUI and CLI flows against the sandbox use only routes the RLark platform has.

The sandbox records every request, on the gateway port or rlark-server's, that matched no platform route
(`Sandbox.unknown_routes`); the flows below (list, detail, logs, describe, check, config, metrics, submit dry
run) must add none. docs/routes.md lists the routes, each with the platform source it follows.
"""

from __future__ import annotations

import json

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.screens.logs import LogScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.log_pane import NOTICE, TEXT
from tests.clirun import cli_runner
from tests.pilot import wait_for

JOB = "demo-ppo"
DRY_RUN = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": "routes-dry-run"},
           "spec": {"tasks": [{"name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
                               "nodeSelector": {"kubernetes.io/hostname": "gpu-a1"}, "runScript": "echo run",
                               "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {
                                   "spec": {"containers": [{"name": "main", "image": "registry.example/x:1"}]}}}}}]}}


def test_cli_flows_use_only_platform_routes(sandbox, env, capsys):
    before = len(sandbox.unknown_routes)
    rl = cli_runner(sandbox.kubeconfig, capsys)
    manifest = env / "job.json"
    manifest.write_text(json.dumps(DRY_RUN))
    for argv, codes in [(("get", "jobs", "-A"), {0}), (("get", "pods", "-A", "-o", "wide"), {0}),
                        (("get", "nodes", "-A"), {0}), (("get", "tasks", "-A"), {0}),
                        (("describe", "job", JOB), {0}), (("logs", JOB, "--tail", "5"), {0, 1}),
                        (("logs", JOB, "--role", "actor", "--previous"), {0, 1}),
                        (("check", JOB, "--format", "json"), {0, 1, 3}), (("config",), {0}),
                        (("metrics", JOB), {0, 1}), (("submit", "-f", str(manifest), "--dry-run"), {0})]:
        result = rl(*argv)
        assert result.code in codes, (argv, result.code, result.err)
    assert sandbox.unknown_routes[before:] == []


async def test_tui_flows_use_only_platform_routes(sandbox, env):
    before = len(sandbox.unknown_routes)
    access = ClusterAccess.open(str(sandbox.kubeconfig))
    app = RlarkApp(access)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.index is not None and app.index.job(JOB) is not None, "the job list")
            await wait_for(pilot, lambda: "data plane" in app.screen.query_one("#status-header").summary(),
                           "the data planes probed")
            app.screen.table.select_key(JOB)
            await pilot.press("enter")
            await wait_for(pilot, lambda: all(JOB in topic for topic in (
                app.index.snapshot.ray, app.index.snapshot.diagnosis, app.index.snapshot.health)),
                "the job detail's reads (Ray, diagnosis, Pod health)")
            await pilot.press("l")
            await wait_for(pilot, lambda: isinstance(app.screen, LogScreen) and app.screen.query("#log-view")
                           and any(not line[NOTICE] for line in app.screen.view.shown_lines), "a log line")
            logs = app.screen
            await pilot.press("p")
            await wait_for(pilot, lambda: logs.previous and logs.view.shown_lines, "the previous instance's read",
                           show=lambda app: "\n".join(line[TEXT] for line in logs.view.shown_lines))
            await pilot.press("escape", "escape")
            await wait_for(pilot, lambda: isinstance(app.screen, JobListScreen), "the job list again")
    finally:
        access.close()
    assert sandbox.unknown_routes[before:] == []
