"""The check screen's ctrl+s writes the summary to the Job (Pilot, the shared sandbox over HTTPS), read-only
refuses that write but keeps the local record; `:records` lists the saved record and the annotated Job, and
`enter` opens the record."""

from __future__ import annotations

import json

import pytest

from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.model.check_summary import read_summary
from rlark_tui.model.keys import CHECK_SUMMARY_ANNOTATION
from rlark_tui.screens.records import RecordsScreen, RecordViewScreen
from rlark_tui.tui.app import RlarkApp
from tests.console.test_console_tui import notes
from tests.pilot import drawn, press, wait_for

from .scenarios import SCENARIOS
from .test_screen import SIZE, _open

JOB = "demo-ppo"


@pytest.fixture
def access(sandbox, env):
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    yield access
    access.patch(JOBS, JOB, {"metadata": {"annotations": {CHECK_SUMMARY_ANNOTATION: None}}})
    access.close()


def _summary(access):
    return read_summary(access.get(JOBS, JOB)["metadata"].get("annotations"))


async def _save(pilot, app, records):
    screen = await _open(pilot, app, SCENARIOS["healthy"][0], records)
    screen.focus_body()
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: "record saved" in notes(app), "the saved record", show=notes)
    return screen


async def test_ctrl_s_writes_the_summary_to_the_job_and_records_lists_it(access, env):
    records = env / "state"
    app = RlarkApp(access, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await _save(pilot, app, records)
        await wait_for(pilot, lambda: "the summary was not written to the Job: read-only mode" in notes(app),
                       "the refusal", show=notes)
    assert _summary(access) is None and list((records / "checks").glob("*.md"))

    app = RlarkApp(access)
    async with app.run_test(size=SIZE) as pilot:
        await _save(pilot, app, records)
        await wait_for(pilot, lambda: "check summary written to job demo-ppo" in notes(app), "the write", show=notes)
        summary = _summary(access)
        assert summary is not None and len(summary.results) == 6
        app.run_command("records")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RecordsScreen)
        table = screen.query_one("#records-table")
        # a record per save (the live evidence may time a report apart from the posted one) and the Job
        await wait_for(pilot, lambda: f"job:{JOB}" in table.visible_keys and any(
            key.startswith("record:") for key in table.visible_keys), "the records and the annotated Job",
            show=lambda app: str(table.visible_keys))
        on_job = table.get_row_at(table.get_row_index(f"job:{JOB}"))
        assert on_job[2].startswith(f"{summary.passed}/6 {summary.decision or '-'} ") and " ago" in on_job[2]
        record = next(key for key in table.visible_keys if key.startswith("record:"))
        table.select_key(record)
        await pilot.press("enter")
        assert isinstance(app.screen, RecordViewScreen)
        text = app.screen.query_one("#record-text")
        await wait_for(pilot, lambda: "demo-ppo" in str(text.render()) and "Recorder" in str(text.render()),
                       "the record's markdown")


FUTURE = '{"at":"2099-01-01T00:00:00Z","recorder":"mallory","results":["pass","pass","pass","pass","pass","pass"],' \
         '"decision":"continue","by":"rlark"}'
CLAIMS = {"claim-malformed": '{"at": "yesterday", "results": ["pass"]', "claim-deep": "[" * 50_000 + "]" * 50_000,
          "claim-future": FUTURE}


@pytest.fixture
def claims(plain_sandbox):
    for name, value in CLAIMS.items():
        plain_sandbox.store.create("jobs", {"metadata": {"name": name, "annotations": {CHECK_SUMMARY_ANNOTATION: value}},
                                            "spec": {"tasks": []}})
    yield plain_sandbox
    for name in CLAIMS:
        plain_sandbox.store.delete("jobs", name)


async def test_a_malformed_or_future_summary_is_a_flagged_claim_in_records(claims, env):
    """:records lists a Job whose check summary is malformed (or 50,000 deep) or dated 2099 as a flagged claim,
    never as a pass and never a crash."""
    access = ClusterAccess.open(str(claims.kubeconfig), claims.context)
    app = RlarkApp(access)
    try:
        async with app.run_test(size=SIZE) as pilot:
            app.run_command("records")
            await drawn(pilot)
            assert isinstance(app.screen, RecordsScreen)
            table = app.screen.query_one("#records-table")
            await wait_for(pilot, lambda: all(f"job:{name}" in table.visible_keys for name in CLAIMS),
                           "the Jobs with claims", show=lambda app: str(table.visible_keys))
            cells = {name: table.get_row_at(table.get_row_index(f"job:{name}"))[2] for name in CLAIMS}
            assert cells["claim-malformed"] == cells["claim-deep"] == "malformed?"
            assert cells["claim-future"].startswith("future? in ") and cells["claim-future"].endswith(" mallory")
            assert not any("6/6" in str(cell) for cell in cells.values())
    finally:
        access.close()


async def test_a_record_of_a_megabyte_is_laid_out_in_a_bounded_part(env):
    """Issue 33 (O33a item 4): `:records` read a record's markdown whole (1 MiB, its bound) into one Static, and
    laid all of it out on the UI thread: 512,000 lines froze the TUI for 98 s (70 s of its CPU), one line of 1 MiB
    for 1.8 s. The view lays out the first YAML_LINES lines, each cut at FIELD_CHARS, and says in one line how many
    more there are and where the whole record is; a record whose Job name is 1 MiB is a cut cell. Both shapes are
    records of one list, each opened from it in turn."""
    from rlark_tui.view.yamltab import YAML_LINES

    checks = env / "state" / "checks"
    checks.mkdir(parents=True, mode=0o700, exist_ok=True)
    shapes = {"many-lines": "line\n" * 200_000, "one-long-line": "x" * 1_000_000}
    for day, (shape, text) in enumerate(shapes.items(), 1):
        job = "J" * 1_000_000 if day == 1 else shape
        (checks / f"{shape}.json").write_text(json.dumps({"job": job, "checkedAt": f"2026-12-0{day}T00:00:00Z",
                                                          "checks": [{"result": "pass"}]}))
        (checks / f"{shape}.md").write_text(text)
    for path in checks.iterdir():
        path.chmod(0o600)
    shown = {}
    app = RlarkApp(None)
    async with app.run_test(size=SIZE) as pilot:
        app.run_command("records")
        table = await wait_for(pilot, lambda: isinstance(app.screen, RecordsScreen) and app.screen.query(
            "#records-table") and app.screen.query_one("#records-table"), "the records table")
        await wait_for(pilot, lambda: len(table.visible_keys) == len(shapes), "the records' rows")
        assert [len(table.get_row_at(row)[0]) < 1100 for row in range(len(shapes))] == [True] * len(shapes)
        for shape in shapes:
            assert table.select_key(next(key for key in table.visible_keys if key.endswith(f"/{shape}.md"))), shape
            await press(pilot, "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, RecordViewScreen) and app.screen.query("#record-text")
                           and "Reading" not in str(app.screen.query_one("#record-text").render()), f"the {shape} record")
            shown[shape] = str(app.screen.query_one("#record-text").render()).splitlines()
            await press(pilot, "escape")
            await wait_for(pilot, lambda: app.screen is table.screen, "the records again")
    whole = f"the whole record is {checks / 'many-lines.md'})"
    assert shown["many-lines"][:YAML_LINES] == ["line"] * YAML_LINES
    assert shown["many-lines"][YAML_LINES:] == [
        f"… {200_000 - YAML_LINES:,} more lines (the first {YAML_LINES} shown; {whole}"]
    assert shown["one-long-line"] == ["x" * 1000 + "… (999,000 more characters)"]


def test_the_listed_records_hold_a_bounded_part_of_each(env):
    """Issue 33: `:records` kept each listed record's Job name and check results whole, up to the 1 MiB a record is
    read to: 500 records of 1 MiB names held ~500 MB (and 40,000 checks a record ~2.5 MB more each), where a row
    shows a cut cell and a count. Each record is held as its name and time cut and its counts."""
    import tracemalloc

    from rlark_tui.checks.records import list_records

    checks = env / "state" / "checks"
    checks.mkdir(parents=True, mode=0o700, exist_ok=True)
    for n in range(4):
        many = n % 2
        document = {"job": f"job-{n}" if many else f"{n}" + "J" * 900_000, "checkedAt": "T" * (1 << 16),
                    "checks": [{"result": "pass" if k % 3 else "fail"} for k in range(10_000 if many else 6)]}
        path = checks / f"r{n}.json"
        path.write_text(json.dumps(document))
        path.chmod(0o600)
    list_records(env / "state")  # what its first call imports is not what it holds
    tracemalloc.start()
    try:
        records = list_records(env / "state")
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(records) == 4 and held < 1_000_000, held  # 7 MB held whole; ~10 KB now, and the freelists
    by_job = {record.job[:6]: record for record in records}
    assert (by_job["job-1"].passed, by_job["job-1"].checks) == (6_666, 10_000)
    assert by_job["0JJJJJ"].job == "0" + "J" * 252 + f"… ({900_001 - 253:,} more characters)"
