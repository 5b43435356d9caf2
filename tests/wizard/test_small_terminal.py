"""The wizard at 80x24 as a new user meets it: every role of step 1 on one line each with its task label,
and tabbing through steps 2 and 3 keeps the focused field (with its messages) in view.
"""

from __future__ import annotations

from rlark_tui.screens.wizard_steps import FieldRow
from rlark_tui.tui.app import RlarkApp
from tests.pilot import press, wait_for
from wizard.helpers import data_draft, open_offline


def visible(widget, within) -> bool:
    return within.region.contains_region(widget.region)


async def test_step_1_shows_every_role_on_one_line(state):
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_offline(pilot)
        await pilot.click("#add-role")
        await pilot.pause()
        step = screen.query_one("#step-1")
        for index in range(4):
            label = screen.query_one(f"#task-{index}")
            assert label.region.height == 1 and visible(label, step), f"role {index}"
        assert str(screen.query_one("#task-0").render()) == "task: actor · Actor"
        assert str(screen.query_one("#task-3").render()).startswith("task: new-role")
        assert visible(screen.query_one("#w-header"), step)


async def test_tabbing_keeps_the_focused_field_and_its_messages_in_view(state):
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_offline(pilot, data_draft())
        for step_number, last in ((2, "w-memory"), (3, "w-record-outputPath")):
            await press(pilot, "ctrl+n")
            assert screen.step == step_number
            step = screen.query_one(f"#step-{step_number}")
            seen = []
            while app.focused.id != last:
                await press(pilot, "tab")
                focused = app.focused
                seen.append(focused.id)
                row = next((n for n in focused.ancestors if isinstance(n, FieldRow)), focused)
                # the step scrolls on the focus event, drawn at the next screen update
                await wait_for(pilot, lambda row=row, step=step: visible(row, step),
                               f"step {step_number}: {focused.id}'s row in view", timeout=5,
                               show=lambda _, row=row, step=step: f"row {row.region}, step {step.region}")
                assert len(seen) < 40, seen
            assert len(seen) >= 10, seen


async def test_a_message_that_makes_a_step_scroll_leaves_its_fields_width_alone(state):
    """Issue 33 (keep the wizard quick on a large cluster): a step whose rows just fit gained its scrollbar when a
    message appeared beside a field (and lost it when it went), which narrowed every row and its widgets by the
    scrollbar's width, so Textual laid the step out twice: a worker count typed over 10,000 Nodes was 160 ms of the
    UI thread, where the image, whose message changed nothing else, was 60-87 ms. The steps keep the scrollbar's
    gutter whether or not they scroll."""
    from textual.widgets import Input

    app = RlarkApp(None)
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await open_offline(pilot, data_draft())
        await press(pilot, "ctrl+n")
        step = screen.query_one("#step-2")
        await wait_for(pilot, lambda: step.show_vertical_scrollbar, "step 2 to scroll at 24 rows")
        for _ in range(5):  # rows laid out after it first scrolled: fit it to them too, until its height holds
            height = step.virtual_size.height
            await pilot.resize_terminal(100, app.size.height - step.region.height + height)
            await pilot.pause()
            if step.virtual_size.height == height:
                break
        await wait_for(pilot, lambda: not step.show_vertical_scrollbar, "step 2 to fit")
        image = screen.query_one("#w-image", Input)
        width = image.size.width
        image.value = "not pinned"
        await wait_for(pilot, lambda: step.show_vertical_scrollbar, "the message to make step 2 scroll")
        assert str(screen.query_one("#m-image").render()).startswith("✗ must not contain spaces")
        assert image.size.width == width
