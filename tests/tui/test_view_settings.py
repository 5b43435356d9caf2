"""View settings kept per context (issue 36 item 6) on the shared sandbox: the job list's sort, wide columns and
filter and the theme, changed in one app, come back in the next app on the same context and not on another
context (a second name for the same control plane); a corrupt file is one line and the default view."""

from __future__ import annotations

import contextlib
import json

import pytest
import yaml

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.local.config import views_path
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.tui.app import RlarkApp
from rlark_tui.widgets.filter_bar import FilterBar
from tests.pilot import wait_for

SIZE = (80, 24)
OTHER = "site-b"


@pytest.fixture
def kubeconfig(plain_sandbox, env):
    """The sandbox's kubeconfig with a second context of the same control plane."""
    data = yaml.safe_load(plain_sandbox.kubeconfig.read_text())
    data["contexts"].append({**data["contexts"][0], "name": OTHER})
    path = env / "kubeconfig"
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o600)
    return str(path)


def shown(app) -> dict:
    """What the job list shows of its view: sort, wide columns, the filter bar and the rows, and the theme."""
    table = app.screen.table
    bar = app.screen.query_one(FilterBar)
    names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
    return {"sort": (table.sort_column, table.sort_reverse), "wide": table.wide, "theme": app.theme,
            "filter": bar.value, "names": names}


def node_rows(app) -> list[str]:
    found = app.screen.query("#node-table")
    if not found:
        return []
    table = found.first()
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def listed(pilot, app) -> None:
    await wait_for(pilot, lambda: isinstance(app.screen, JobListScreen) and app.screen.table.row_count
                   and app.state.views is not None, "the Jobs and the view settings")


@contextlib.asynccontextmanager
async def listed_app(kubeconfig: str, context: str, **options):
    """An app on `context` with its Jobs and view settings shown; its access closed after it ends."""
    access = ClusterAccess.open(kubeconfig, context)
    app = RlarkApp(access, **options)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await listed(pilot, app)
            yield app, pilot
    finally:
        access.close()


async def test_the_view_comes_back_on_the_same_context_and_another_has_its_own(plain_sandbox, kubeconfig):
    context = plain_sandbox.context
    async with listed_app(kubeconfig, context) as (app, pilot):
        default = shown(app)
        assert default["sort"] == (None, False) and not default["wide"] and default["filter"] == ""
        await pilot.press("A", "A", "w", "slash", *"demo", "enter")
        app.theme = "textual-light"
        await pilot.pause()
        changed = shown(app)
        assert changed["names"] and all("demo" in name for name in changed["names"])
        app.run_command("nodes")
        await wait_for(pilot, lambda: len(node_rows(app)) == 5, ":nodes")
        await pilot.press("slash", *"edge", "enter", "N", "N")
        nodes = node_rows(app)
        assert nodes == ["rlark-edge-b/edge-b2", "rlark-edge-b/edge-b1"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: views_path(context).exists() and json.loads(
            views_path(context).read_text())["theme"] == "textual-light", "the view settings written")
    saved = json.loads(views_path(context).read_text())
    assert saved["tables"]["jobs"] == {"sort": "age", "reverse": True, "wide": True, "filter": "demo"}
    assert saved["tables"]["nodes"] == {"sort": "name", "reverse": True, "wide": False, "filter": "edge"}
    assert oct(views_path(context).stat().st_mode & 0o777) == "0o600"

    async with listed_app(kubeconfig, context) as (app, pilot):
        await wait_for(pilot, lambda: shown(app)["names"] == changed["names"], "the same rows",
                       show=lambda app: str(shown(app)))
        again = shown(app)
        assert again == {**changed, "theme": "textual-light"}
        assert again["sort"] == ("age", True) and again["wide"] and again["filter"] == "demo"
        app.run_command("nodes")
        await wait_for(pilot, lambda: node_rows(app) == nodes, ":nodes filtered and sorted as before")

    async with listed_app(kubeconfig, OTHER) as (app, pilot):
        other = shown(app)
        assert other["sort"] == (None, False) and not other["wide"] and other["filter"] == ""
        assert other["theme"] == default["theme"] == "textual-dark"
        await pilot.press("N")
        await wait_for(pilot, lambda: views_path(OTHER).exists(), "site-b's own file")
    assert json.loads(views_path(OTHER).read_text())["tables"]["jobs"]["sort"] == "name"
    assert json.loads(views_path(context).read_text())["tables"]["jobs"]["filter"] == "demo"


async def test_a_corrupt_view_file_is_one_line_and_the_default_view(plain_sandbox, kubeconfig):
    path = views_path(OTHER)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"version": 1, "tables": {"jobs": {"filter": "\\u001b]52;c;x\\u0007"}}}')
    async with listed_app(kubeconfig, OTHER, theme="light", theme_fixed=True) as (app, _pilot):
        notes = [n.message for n in app._notifications]
        warning = next(n for n in notes if "view settings" in n)
        assert "\n" not in warning and "the default view is shown" in warning and "\x1b" not in warning
        assert shown(app)["filter"] == "" and shown(app)["sort"] == (None, False)
        assert app.theme == "textual-light"


async def test_a_filter_typed_key_by_key_is_written_once_and_kept_when_the_app_ends_at_once(plain_sandbox, kubeconfig,
                                                                                            monkeypatch):
    """Each key of a filter wrote the view file on a thread of its own; the view is written once it stops changing,
    and when the app ends before that, as it ends."""
    from rlark_tui.local import config
    from rlark_tui.tui import app as app_module

    monkeypatch.setattr(app_module, "VIEWS_WRITE_SECONDS", 60.0)  # the view keeps changing for the whole test
    written = []
    save_views = config.save_views

    def counted(context: str, settings) -> None:
        written.append(settings.table("jobs").filter)
        save_views(context, settings)

    monkeypatch.setattr(config, "save_views", counted)
    context = plain_sandbox.context
    async with listed_app(kubeconfig, context) as (app, pilot):
        await pilot.press("slash", *"demo")
        assert shown(app)["filter"] == "demo" and written == []
    assert written == ["demo"]
    assert json.loads(views_path(context).read_text())["tables"]["jobs"]["filter"] == "demo"
