"""Several control planes at once (issue 36 item 1): the shared sandbox and a second one of this module's, their
kubeconfig files listed in KUBECONFIG under the contexts `site-a` and `site-b`; `site-b` is stopped midway."""

from __future__ import annotations

import contextlib
import os
import re
import time

import pytest
import yaml

from rlark_tui.cli import main
from tests.clirun import Result


def renamed(path, name: str) -> dict:
    """A sandbox's kubeconfig with its context, cluster and user called `name`."""
    config = yaml.safe_load(path.read_text())
    for section in ("clusters", "contexts", "users"):
        for entry in config[section]:
            entry["name"] = name
    config["contexts"][0]["context"].update(cluster=name, user=name)
    config["current-context"] = name
    return config


@pytest.fixture(scope="module")
def second_sandbox(tmp_path_factory):
    from rlark_sandbox import Sandbox
    with Sandbox(tmp_path_factory.mktemp("site-b"), seed="demo", agent=False) as sb:
        yield sb


@pytest.fixture
def two_sites(plain_sandbox, second_sandbox, env, monkeypatch):
    """KUBECONFIG listing both sandboxes' kubeconfig files; a third file repeats `site-a` pointing nowhere,
    which loses to the first file's entry as kubectl merges them."""
    files = []
    for name, sandbox in (("site-a", plain_sandbox), ("site-b", second_sandbox), ("site-a", None)):
        config = renamed((sandbox or plain_sandbox).kubeconfig, name)
        if sandbox is None:
            config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"
        path = env / f"kubeconfig-{len(files)}"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        files.append(str(path))
    monkeypatch.setenv("KUBECONFIG", ":".join(files))
    return plain_sandbox, second_sandbox


def job(name: str) -> dict:
    """A Job whose image the sandbox cannot pull (it never runs)."""
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"tasks": [{"name": "actor", "head": True, "role": "Actor", "agentType": "Kubernetes",
                                "runScript": "echo run", "kubernetes": {"workload": {
                                    "kind": "StatefulSet", "replicas": 1, "template": {"spec": {"containers": [
                                        {"name": "main", "image": "registry.example.com/rlinf:invalid"}]}}}}}]}}


def rlark(capsys, *argv: str) -> Result:
    code = main(list(argv))
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


def test_get_jobs_of_every_context_has_a_context_column(two_sites, capsys):
    every = rlark(capsys, "get", "jobs", "--all-contexts")
    assert every.code == 0, every.err
    table = rows(every.out)
    assert table[0][:2] == ["CONTEXT", "NAME"]
    assert [row[:2] for row in table[1:] if row[1] == "demo-ppo"] == [["site-a", "demo-ppo"],
                                                                     ["site-b", "demo-ppo"]]
    named = rlark(capsys, "--context", "site-b", "get", "jobs", "demo-ppo", "--context", "site-a")
    assert named.code == 0, named.err
    assert [row[:2] for row in rows(named.out)[1:]] == [["site-b", "demo-ppo"], ["site-a", "demo-ppo"]]
    one = rlark(capsys, "get", "jobs", "--context", "site-b")
    assert rows(one.out)[0][0] == "NAME"


def test_a_context_that_fails_is_one_line_and_the_others_print(two_sites, capsys):
    missing = rlark(capsys, "get", "jobs", "--context", "site-a", "--context", "site-b", "--context", "nowhere")
    assert missing.code == 1
    assert missing.err.strip() == "context nowhere: context 'nowhere' is not in the kubeconfig (contexts: site-a, " \
                                  "site-b)"
    assert {row[0] for row in rows(missing.out)[1:]} == {"site-a", "site-b"}
    refused = rlark(capsys, "logs", "demo-ppo", "--context", "site-a", "--context", "site-b")
    assert refused.code == 2
    assert "rlark logs reads one context" in refused.err



def test_top_and_status_cover_every_context(two_sites, capsys):
    nodes = rlark(capsys, "top", "nodes", "-A", "--all-contexts")
    assert nodes.code == 0, nodes.err
    table = rows(nodes.out)
    assert table[0][:3] == ["CONTEXT", "NAMESPACE", "NAME"]
    assert {row[0] for row in table[1:]} == {"site-a", "site-b"}
    assert len(table) - 1 == 2 * len({tuple(row[1:3]) for row in table[1:]})
    assert rlark(capsys, "status", "--all-contexts", "--refresh").code == 0
    segment = rlark(capsys, "status", "--all-contexts", "--tmux").out.strip()
    assert re.fullmatch(r"rlark ▶\d+ ✗\d+( ⚠\d+)?", segment), segment


def test_status_of_one_context_is_that_contexts_own(two_sites, capsys):
    """Issue 33, left open by the fifteenth round: `rlark status --context NAME` (a tmux status line per cluster)
    kept one cache for any single context, so the line of site-b answered with the counts the last refresh of
    site-a wrote. Each choice of contexts (and of kubeconfig file) has its own."""
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.kinds import JOBS

    site_a, site_b = two_sites
    ClusterAccess.open(None, "site-b").create(JOBS, job("ctx-status"))
    site_b.store.mutate("jobs", "ctx-status", lambda obj: {**obj, "status": {"phase": "Failed"}})

    def expected(sandbox) -> str:
        phases = [(item.get("status") or {}).get("phase") for item in sandbox.store.list("jobs")[0]]
        return f"rlark ▶{phases.count('Running')} ✗{phases.count('Failed')}"

    assert rlark(capsys, "status", "--context", "site-b", "--refresh").code == 0
    assert rlark(capsys, "status", "--context", "site-a", "--refresh").code == 0
    for name, sandbox in (("site-b", site_b), ("site-a", site_a)):
        shown = rlark(capsys, "status", "--context", name, "--tmux").out.strip()
        assert re.sub(r" ⚠\d+$", "", shown) == expected(sandbox), (name, shown)


def test_the_plain_status_is_its_kubeconfigs_current_contexts_own(two_sites, capsys, monkeypatch):
    """Issue 33, left open by the fifteenth round: the plain `rlark status` (no --kubeconfig, no --context) kept one
    cache whatever KUBECONFIG and the current context named, so a tmux pane whose kubeconfig names site-a showed
    the counts a refresh for site-b wrote last. Its cache is keyed by the files kubectl reads and their current
    context."""
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.kinds import JOBS

    site_a, site_b = two_sites
    if site_b.store.get("jobs", "ctx-plain", "") is None:
        ClusterAccess.open(None, "site-b").create(JOBS, job("ctx-plain"))
    site_b.store.mutate("jobs", "ctx-plain", lambda obj: {**obj, "status": {"phase": "Failed"}})

    def expected(sandbox) -> str:
        phases = [(item.get("status") or {}).get("phase") for item in sandbox.store.list("jobs")[0]]
        return f"rlark ▶{phases.count('Running')} ✗{phases.count('Failed')}"

    first, second = os.environ["KUBECONFIG"].split(":")[:2]

    def shown() -> str:
        return re.sub(r" ⚠\d+$", "", rlark(capsys, "status", "--tmux").out.strip())

    assert expected(site_a) != expected(site_b)
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")  # current-context: site-a, the first file's
    assert rlark(capsys, "status", "--refresh").code == 0
    with open(first) as file:
        kept = file.read()
    with open(first, "w") as file:  # `kubectl config use-context site-b`
        file.write(kept.replace("current-context: site-a", "current-context: site-b"))
    assert rlark(capsys, "status", "--refresh").code == 0
    assert shown() == expected(site_b)
    with open(first, "w") as file:  # back to site-a: the counts its refresh wrote
        file.write(kept)
    assert shown() == expected(site_a)


def test_watch_follows_every_context(two_sites, capsys):
    """A phase change of site-b's Job is a line of site-b's. Phase changes count from the first list the watch
    printed from, which the test cannot see: the phase moves until a line comes (the first move after it does).
    The Job's failure is site-b's alert, in the watch's lines and in `rlark status --long`'s CONTEXT column."""
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.kinds import JOBS
    from tests.alerts.conftest import Watch
    from tests.streams import watch_opens

    _site_a, site_b = two_sites
    access = ClusterAccess.open(None, "site-b")
    access.create(JOBS, job("ctx-watch"))
    with watch_opens(site_b, "jobs"):
        watch = Watch(["watch", "-o", "json", "--all-contexts"], dict(os.environ))
    line = None
    try:
        for phase in ("Running", "Failed") * 5:
            site_b.store.mutate("jobs", "ctx-watch", lambda obj, phase=phase: {**obj, "status": {"phase": phase}})
            with contextlib.suppress(AssertionError):
                line = watch.wait_for(lambda line: line["job"] == "ctx-watch" and line["rule"] == "phase",
                                      what="the Job's phase", timeout=2)
                break
        assert line is not None, "no phase line in 10 moves:\n" + "".join(watch.text + watch.errors)
        assert line["context"] == "site-b" and line["state"] in ("Running", "Failed")
        site_b.store.mutate("jobs", "ctx-watch", lambda obj: {**obj, "status": {"phase": "Failed"}})
        fired = watch.wait_for(lambda line: line["job"] == "ctx-watch" and line["rule"] == "job-failed",
                               what="the Job's job-failed alert")
        assert fired["context"] == "site-b"
        deadline = time.monotonic() + 10
        while True:  # the summary is written just after the line
            out = rlark(capsys, "status", "--long", "--all-contexts").out
            alert = [row[:4] for row in rows(out) if row[1:2] == ["Alert"] and "ctx-watch" in row]
            if alert or time.monotonic() > deadline:
                break
        assert alert == [["site-b", "Alert", "ctx-watch", "critical"]], out
    finally:
        watch.close()
        access.delete(JOBS, "ctx-watch")
        access.close()


def test_a_stopped_sandbox_is_reported_and_the_other_lists(two_sites, capsys):
    _site_a, site_b = two_sites
    site_b.stop()
    try:
        answer = rlark(capsys, "get", "jobs", "--all-contexts", "--request-timeout", "5")
        assert answer.code == 1
        lines = answer.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("context site-b: "), answer.err
        assert {row[0] for row in rows(answer.out)[1:]} == {"site-a"}
        assert rlark(capsys, "status", "--all-contexts", "--refresh", "--request-timeout", "5").code == 0
        status = rlark(capsys, "status", "--all-contexts")
        assert " ○1 " in status.out and "not answering: site-b)" in status.out, status.out
        long = rlark(capsys, "status", "--long", "--all-contexts", "--request-timeout", "5")
        assert long.err.startswith("context site-b: ") and long.out.startswith("Jobs: ")
    finally:
        site_b.start()


def header(app) -> str:
    from rlark_tui.widgets.status_header import StatusHeader
    return app.screen.query_one(StatusHeader).summary()


def screen_text(app) -> str:
    """Every character on the screen, row by row: what the user reads."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def listed(app) -> dict[str, list[str]]:
    """The job list's rows by key, as their cells' text."""
    from rlark_tui.screens.job_list import JobListScreen
    screen = app.screen
    if not isinstance(screen, JobListScreen):
        return {}
    table = screen.table
    rows = [[str(getattr(cell, "plain", cell)) for cell in table.get_row_at(i)] for i in range(table.row_count)]
    return {f"{row[1]}@{row[0]}": row for row in rows}



def test_the_tui_opens_the_contexts_that_can_be(two_sites):
    """`rlark --context site-a --context nowhere`: site-a opens, nowhere is listed unreachable with why; with
    no context that opens, the TUI does not start and says why for each."""
    import argparse

    from rlark_tui.errors import RlarkError
    from rlark_tui.tui.app import open_contexts

    opened = open_contexts(argparse.Namespace(contexts=["site-a", "nowhere"], context="site-a"))
    assert opened is not None and opened["site-a"].context == "site-a"
    assert opened["nowhere"] == "context 'nowhere' is not in the kubeconfig (contexts: site-a, site-b)"
    opened["site-a"].close()
    with pytest.raises(RlarkError, match="no context could be opened: context gone: .*; context nowhere: "):
        open_contexts(argparse.Namespace(contexts=["gone", "nowhere"], context="gone"))
    assert open_contexts(argparse.Namespace(contexts=["site-a"], context="site-a")) is None

async def test_the_tui_lists_every_context_and_goes_on_when_one_stops(two_sites):
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.errors import NotFound
    from rlark_tui.cluster.kinds import JOBS
    from rlark_tui.screens.job_detail import JobDetailScreen
    from rlark_tui.tui.app import RlarkApp
    from tests.pilot import wait_for

    _site_a, site_b = two_sites
    contexts = {name: ClusterAccess.open(None, name) for name in ("site-a", "site-b")}
    app = RlarkApp(contexts["site-a"], contexts={**contexts, "gone": "context 'gone' is not in the kubeconfig"})
    body = job("ctx-live")
    stopped = False
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_for(pilot, lambda: {"demo-ppo@site-a", "demo-ppo@site-b"} <= set(listed(app)),
                           what="demo-ppo of both contexts", show=lambda a: str(listed(a)))
            assert [line.split()[:2] for line in screen_text(app).splitlines() if "CONTEXT" in line] == [
                ["CONTEXT", "NAME"]]
            await wait_for(pilot, lambda: "● site-a connected ● site-b connected ○ gone unreachable" in header(app),
                           what="each context's state", show=header)
            assert app.screen.table.select_key("demo-ppo@site-b")
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), what="the job detail")
            assert app.access is contexts["site-b"] and app.state.context == "site-b"
            await pilot.press("escape")
            site_b.store.mutate("jobs", "demo-ppo", lambda obj: {**obj, "status": {**obj.get("status", {}),
                                                                                   "phase": "Failed"}})
            await pilot.press("colon", *"alerts", "enter")
            await wait_for(pilot, lambda: any(line.split()[:1] == ["site-b"] and "job-failed" in line
                                              for line in screen_text(app).splitlines()),
                           what="site-b's alert in :alerts", show=screen_text)
            assert [line.split()[:2] for line in screen_text(app).splitlines() if "SEVERITY" in line] == [
                ["CONTEXT", "TIME"]]
            await pilot.press("escape")
            await wait_for(pilot, lambda: "demo-ppo@site-a" in listed(app), what="the job list again")
            site_b.stop()
            stopped = True
            await wait_for(pilot, lambda: "○ site-b unreachable" in header(app), timeout=10, what="site-b unreachable",
                           show=header)
            contexts["site-a"].create(JOBS, body)
            await wait_for(pilot, lambda: "ctx-live@site-a" in listed(app), timeout=10, what="a new site-a Job")
            assert "demo-ppo@site-b" in listed(app)
    finally:
        if stopped:
            site_b.start()
        with contextlib.suppress(NotFound):
            contexts["site-a"].delete(JOBS, "ctx-live")
        for access in contexts.values():
            access.close()


@pytest.fixture
def cordoned_b(two_sites):
    """edge-b2 of site-b cordoned."""
    _site_a, site_b = two_sites

    def cordon(value: bool) -> None:
        site_b.call(lambda: site_b.store.mutate(
            "nodes", "edge-b2", lambda n: {**n, "spec": {**(n.get("spec") or {}), "unschedulable": value}},
            namespace="rlark-edge-b"))

    cordon(True)
    yield two_sites
    cordon(False)


def test_status_long_covers_every_context(cordoned_b, capsys):
    result = rlark(capsys, "status", "--long", "--all-contexts")
    assert result.code == 0, result.err
    table = rows(result.out)
    assert result.out.startswith("Jobs: ") and ["CONTEXT", "KIND", "OBJECT", "STATE", "WHY", "AGE"] in table
    assert [row[:4] for row in table if "rlark-edge-b/edge-b2" in row] == [
        ["site-b", "Node", "rlark-edge-b/edge-b2", "cordoned"]]


async def test_overview_covers_every_context_and_opens_in_the_lines_own(cordoned_b):
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.screens.node_detail import NodeDetailScreen
    from rlark_tui.screens.overview import OverviewScreen
    from rlark_tui.tui.app import RlarkApp
    from rlark_tui.widgets.live_table import LiveTable
    from tests.pilot import wait_for

    contexts = {name: ClusterAccess.open(None, name) for name in ("site-a", "site-b")}
    app = RlarkApp(contexts["site-a"], contexts=contexts)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_for(pilot, lambda: all(app.state.contexts.values()), what="both contexts' indexes")
            app.run_command("overview")
            await pilot.pause()
            assert isinstance(app.screen, OverviewScreen)
            table = app.screen.query_one(LiveTable)
            key = "1node\tsite-b\trlark-edge-b/edge-b2"
            await wait_for(pilot, lambda: key in table.visible_keys, what="site-b's cordoned Node",
                           show=lambda a: str(table.visible_keys))
            assert [str(cell) for cell in table.get_row_at(table.get_row_index(key))][:4] == [
                "site-b", "Node", "rlark-edge-b/edge-b2", "cordoned"]
            assert not any(k.startswith("1node\tsite-a\t") and k.endswith("edge-b2") for k in table.visible_keys)
            table.select_key(key)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, NodeDetailScreen), what="the Node's detail")
            assert app.access is contexts["site-b"] and app.screen.node_key == "rlark-edge-b/edge-b2"
    finally:
        for access in contexts.values():
            access.close()


@pytest.fixture
def read_only_b(two_sites):
    """site-b's context says `readonly: true` in its own rlark.io/console extension; site-a's does not."""
    site_b_file = os.environ["KUBECONFIG"].split(os.pathsep)[1]
    config = yaml.safe_load(open(site_b_file))
    config["contexts"][0]["context"]["extensions"][0]["extension"]["readonly"] = True
    with open(site_b_file, "w") as out:
        yaml.safe_dump(config, out)
    return two_sites


READ_ONLY_B = "(context site-b is read-only in its kubeconfig)"


def test_each_context_keeps_its_own_read_only_setting(read_only_b, capsys):
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.errors import NotFound
    from rlark_tui.cluster.kinds import JOBS

    refused = rlark(capsys, "stop", "demo-ppo", "--context", "site-b")
    assert refused.code != 0 and refused.err.strip().endswith(f"refusing to stop job demo-ppo {READ_ONLY_B}"), \
        refused.err
    access = ClusterAccess.open(None, "site-a")
    access.create(JOBS, job("ctx-writable"))
    try:
        stopped = rlark(capsys, "stop", "ctx-writable", "--yes", "--context", "site-a")
        assert stopped.code == 0, stopped.err
    finally:
        with contextlib.suppress(NotFound):
            access.delete(JOBS, "ctx-writable")
        access.close()


async def test_the_tui_refuses_on_a_read_only_context_and_asks_on_the_other(read_only_b):
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.screens.confirm import ConfirmScreen
    from rlark_tui.screens.job_list import JobListScreen
    from rlark_tui.tui.app import RlarkApp
    from tests.pilot import wait_for

    contexts = {name: ClusterAccess.open(None, name) for name in ("site-a", "site-b")}
    app = RlarkApp(contexts["site-a"], contexts=contexts)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_for(pilot, lambda: {"demo-ppo@site-a", "demo-ppo@site-b"} <= set(listed(app)),
                           what="demo-ppo of both contexts", show=lambda a: str(listed(a)))
            assert app.screen.table.select_key("demo-ppo@site-b")
            await pilot.press("s")
            refusal = f"read-only mode: refusing to stop job demo-ppo {READ_ONLY_B}"
            await wait_for(pilot, lambda: any(n.message == refusal for n in app._notifications),
                           what="the refusal", show=lambda a: str([n.message for n in a._notifications]))
            assert isinstance(app.screen, JobListScreen) and "READ-ONLY" in header(app)
            assert app.screen.table.select_key("demo-ppo@site-a")
            await pilot.press("s")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="site-a's confirm dialog")
            await pilot.press("escape")
    finally:
        for access in contexts.values():
            access.close()


def test_status_takes_context_names_that_are_not_utf_8():
    """A context name typed as bytes that are not UTF-8 (Python's argv holds them as lone surrogates) named no
    cache: `rlark status --context <0xff> --context b` ended in a crash report (UnicodeEncodeError)."""
    import argparse

    from rlark_tui.commands import status

    def files(*names: str) -> tuple[str, str]:
        return status._files(argparse.Namespace(contexts=list(names), all_contexts=False, kubeconfig=None))

    assert files("\udcff", "b") != files("\udcfe", "b") != files("b")
