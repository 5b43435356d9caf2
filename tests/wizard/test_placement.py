"""Placement by hardware in the wizard at 80x24, against the sandbox's Nodes, as the console's picker offers it:
the GPU model with its free GPUs and Nodes, automatic placement on every eligible Node, then picked Nodes that
the worker count follows; the rendered Job selects exactly those Nodes and passes the Job CRD's schema.
"""

from __future__ import annotations

from dataclasses import replace

from model.jobschema import assert_valid_job
from textual.widgets import Input, Select, Static
from textual.widgets._select import SelectOverlay

from rlark_tui.model.objects import Node
from rlark_tui.model.placement import hardware_named
from rlark_tui.tui.app import RlarkApp
from tests.pilot import key_event, press
from wizard.helpers import base_draft, message, new_app, open_wizard, settle

H100 = "NVIDIA H100 80GB HBM3"


def overlay_prompts(select: Select) -> list[str]:
    overlay = select.query_one(SelectOverlay)
    return [str(overlay.get_option_at_index(i).prompt) for i in range(overlay.option_count)]


async def choose(pilot, screen, key: str, starts: str) -> list[str]:
    """Open the select `#w-<key>` with enter, move down to the option that starts with `starts` and take it;
    returns the prompts the open list showed."""
    select = screen.query_one(f"#w-{key}", Select)
    select.focus()
    await press(pilot, "enter")
    await settle(pilot)
    overlay = select.query_one(SelectOverlay)
    assert overlay.display and screen.region.contains_region(overlay.region), f"#w-{key}'s list is not in view"
    prompts = overlay_prompts(select)
    target = next(i for i, prompt in enumerate(prompts) if prompt.startswith(starts))
    while overlay.highlighted != target:
        await pilot.press("down")
    await press(pilot, "enter")
    await settle(pilot)
    return prompts


async def test_wizard_places_a_role_on_h100_nodes_and_the_job_selects_them(access, state):
    app = new_app(access)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_wizard(pilot, base_draft("wiz-place"))
        await press(pilot, "ctrl+n")
        await settle(pilot)
        assert screen.step == 2
        screen.query_one("#w-role-pick").value = 1  # Rollout, in rlark-gpu-a
        await settle(pilot)

        h100 = hardware_named([Node(n) for n in access.nodes()], "rlark-gpu-a", H100)
        assert h100 is not None and len(h100.members) == 3
        free, total = int(h100.free), int(h100.total)
        prompts = await choose(pilot, screen, "hardware", H100)
        assert f"{H100}  {free}/{total} GPUs free · Nodes {h100.nodes_available}/3" in prompts

        role = screen.draft.roles[1]
        assert (role.hardware, role.workers, dict(role.selector)) == (H100, 1, {})
        assert screen.query_one("#w-selector").value == ""
        assert screen.query_one("#w-workers").value == "1"
        eligible = [m.node.name for m in h100.eligible(1)]
        assert f"eligible Nodes (automatic): {', '.join(eligible)}" in message(screen, "hardware")
        task = screen.result.manifest["spec"]["tasks"][1]
        assert task["nodeSelector"] == {"kubernetes.io/hostname": ",".join(eligible)}
        assert task["kubernetes"]["workload"]["replicas"] == 1

        picked = ["gpu-a1", "gpu-a3"]
        for name in picked:
            slots = next(m for m in h100.members if m.node.name == name)
            prompts = await choose(pilot, screen, "node-pick", name)
            assert f"{name}  {int(slots.free)}/{int(slots.total)} GPUs free" in prompts
        assert screen.draft.roles[1].nodes == tuple(picked)
        assert screen.query_one("#w-nodes").value == "gpu-a1 gpu-a3"
        assert screen.query_one("#w-workers").value == "2"
        assert "Workers: 2 (one per picked Node)" in str(screen.query_one("#w-match-summary").render())

        for step in (3, 4):
            await press(pilot, "ctrl+n")
            await settle(pilot)
            assert screen.step == step, str(screen.query_one("#wizard-status").render())
        assert not [f for f in screen.findings if f.level == "error"], screen.findings
        manifest = screen.result.manifest
        task = manifest["spec"]["tasks"][1]
        assert task["nodeSelector"] == {"kubernetes.io/hostname": "gpu-a1,gpu-a3"}
        assert task["kubernetes"]["workload"]["replicas"] == 2
        assert task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
            "nvidia.com/gpu": "1"}
        assert_valid_job(manifest)
        assert "kubernetes.io/hostname: gpu-a1,gpu-a3" in screen.query_one("#w-yaml", Static).content.code


async def test_a_placement_that_cannot_fit_says_why_beside_its_field(access, state):
    app = new_app(access)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_wizard(pilot, base_draft("wiz-place-full"))
        await press(pilot, "ctrl+n")
        await settle(pilot)
        screen.query_one("#w-role-pick").value = 1
        await settle(pilot)
        await choose(pilot, screen, "hardware", H100)
        screen.query_one("#w-gpu").value = "8"
        screen.query_one("#w-workers").value = "4"
        await settle(pilot)
        shown = message(screen, "workers")
        assert shown.startswith("✗ 4 workers × 8 GPUs = 32, but NVIDIA H100 80GB HBM3 has only"), shown


async def test_a_select_of_10000_choices_lays_out_the_first_few_and_the_chosen_one():
    """Issue 33: the hardware picker offers one choice per GPU model the cluster's Nodes name (their
    rlark.io/gpu-model annotation, wizard_fields._hardware_choices), so 10,000 Nodes of 10,000 models made a list of
    10,000 options laid out at each change of the role (and `Pick a Node` one per Node of a model). Every wizard
    select (set_choices) lists the first CHOICES_SHOWN and the one chosen, and its blank line says how many."""
    from textual.app import App

    from rlark_tui.screens.wizard_steps import CHOICES_SHOWN, set_choices

    class One(App):
        def compose(self):
            yield Select([], prompt="pick", id="s")

    options = [(f"GPU-{n:05}  8/8 GPUs free", f"GPU-{n:05}") for n in range(10_000)]
    async with One().run_test() as pilot:
        select = pilot.app.query_one(Select)
        set_choices(select, options, "GPU-09999", prompt="pick")
        await pilot.pause()
        prompts = overlay_prompts(select)
        assert select.value == "GPU-09999"
    assert len(prompts) == CHOICES_SHOWN + 2 and prompts[0] == f"pick · the first {CHOICES_SHOWN} of 10,000 shown"
    assert prompts[-1] == "GPU-09999  8/8 GPUs free"


class ReadNode(dict):
    """A Node CR that notes in `read` each time a derivation reads one of its fields."""

    read: list[int] = []

    def __getitem__(self, key):
        self.read.append(id(self))
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.append(id(self))
        return super().get(key, default)


async def _rollout_on(pilot, snapshot, hardware: str):
    """The wizard of the test data's draft, its Rollout role placed on `hardware` (no selector, one worker), over
    `snapshot`, showing step 2 (that role's workers)."""
    from rlark_tui.flow.messages import SnapshotChanged
    from rlark_tui.screens.wizard import WizardScreen
    from wizard.helpers import data_draft

    pilot.app.post_message(SnapshotChanged(snapshot))
    await pilot.pause()
    draft = data_draft()
    placed = tuple(replace(role, hardware=hardware, selector={}, workers=1) if role.name == "Rollout" else role
                   for role in draft.roles)
    screen = WizardScreen(replace(draft, roles=placed))
    await pilot.app.push_screen(screen)
    await press(pilot, "ctrl+n")
    await settle(pilot)
    return screen


async def test_a_change_in_the_wizard_reads_the_nodes_it_concerns_not_every_node(monkeypatch):
    """Issue 33: every check and hint of the wizard derived the hardware choices of the role's cluster anew (each
    Node's slots, grouped by model): 13 times a change, 0.2 s each over 10,000 Nodes, so a keystroke in the wizard
    held the UI thread for seconds. They are derived once per snapshot (model.placement.NodeSet): a change derives
    no Node's slots (placement.node_slots).

    Each change in the wizard (a field typed, a select changed, a step moved) also matched every role's
    selector against every Node, and listed the cluster's clusters, labels, devices and hardware choices again:
    passes over every Node, so over 10,000 Nodes a change held the UI thread 0.5 s. What the wizard derives of the
    Nodes alone is derived once per snapshot (model.placement.once_per_node_set), and a selector finds its Nodes
    through the labels' index: a change reads the few Nodes its roles are placed on.

    A Snapshot with a Node refreshed (the platform refreshes each Node CR every 30 s) derived all of it again from
    every Node, half a second over 10,000 Nodes: what was derived is updated by the Node that changed
    (placement.node_set_after), and the hardware select shows its new free GPUs.

    Issue 33, a hostile member cluster's Node CR (follows eaddd7f, which holds every draft entering the form to
    what its widgets hold): "Pick a Node" and "Add a label" put a Node's 1 MB name or label value into the Nodes or
    node selector field whole, which Textual's input measures at each change and frame. A picker's fill longer than
    its field holds is not put in, said in one line; a short one still is. Tried first, in the same wizard (one
    wizard and its step 2 are most of the test's CPU), over the test data's Nodes and one of a 1 MB name and label;
    then the Rollout role's picked Node is cleared and the role placed on GPU-042 of the 300 models."""
    from rlark_tui.flow.messages import SnapshotChanged
    from rlark_tui.model import placement
    from rlark_tui.model.placement import UNNAMED_GPU, NodeSet
    from wizard.helpers import offline_snapshot

    snapshot = offline_snapshot()
    long = "n" * 1_000_000
    a3 = snapshot.nodes["rlark-gpu-a/gpu-a3"]
    labels = {**a3["metadata"]["labels"], "kubernetes.io/hostname": long, "pool": long}
    hostile = {**snapshot.nodes, f"rlark-gpu-a/{long}": {**a3, "metadata": {**a3["metadata"], "name": long,
                                                                             "labels": labels}}}
    slotted: list[object] = []
    slots = placement.node_slots
    monkeypatch.setattr(placement, "node_slots", lambda node: slotted.append(node) or slots(node))
    template = snapshot.nodes["rlark-gpu-a/gpu-a1"]
    nodes = {key: ReadNode(raw) for key, raw in snapshot.nodes.items()}
    for n in range(300):
        metadata = {**template["metadata"], "name": f"g{n:03}", "annotations": {"rlark.io/gpu-model": f"GPU-{n:03}"},
                    "labels": {**template["metadata"]["labels"], "kubernetes.io/hostname": f"g{n:03}"}}
        nodes[f"rlark-gpu-a/g{n:03}"] = ReadNode(template, metadata=metadata)
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _rollout_on(pilot, replace(snapshot, nodes=hostile), UNNAMED_GPU)
        screen.query_one("#w-label-pick", Select).value = f"pool={long}"  # the actor's selector
        await settle(pilot)
        selector = screen.query_one("#w-selector", Input).value
        screen.query_one("#w-role-pick", Select).value = 1
        await settle(pilot)
        for name in (long, "gpu-a2"):
            screen.query_one("#w-node-pick", Select).value = name
            await settle(pilot)
        picked = screen.query_one("#w-nodes", Input).value
        said = [n.message for n in app._notifications]
        hostile_roles = screen.draft.roles

        app.post_message(SnapshotChanged(replace(snapshot, nodes=nodes)))
        await settle(pilot)
        screen.query_one("#w-nodes", Input).value = ""
        await settle(pilot)
        screen.query_one("#w-hardware", Select).value = "GPU-042"
        await settle(pilot)
        rollout = screen.draft.roles[1]
        assert (rollout.hardware, rollout.nodes, rollout.workers, screen.role_index) == ("GPU-042", (), 1, 1), rollout
        assert isinstance(app.index.nodes, NodeSet) and len(app.index.nodes) == len(nodes) == 307
        walked, derived = {}, {}
        for change, what in ((lambda: setattr(screen.query_one("#w-workers", Input), "value", "2"), "workers"),
                             (lambda: setattr(screen.query_one("#w-image", Input), "value", "registry/x:1"), "image"),
                             (lambda: setattr(screen.query_one("#w-hardware", Select), "value", "GPU-043"), "hardware"),
                             (lambda: app.post_message(key_event("ctrl+b")), "step")):
            ReadNode.read.clear()
            slotted.clear()
            change()
            await settle(pilot)
            walked[what] = len(set(ReadNode.read))
            derived[what] = len(slotted)
        await screen.jump_to("header3")
        hint = message(screen, "header3")
        await press(pilot, "ctrl+b")
        await settle(pilot)
        refreshed = ReadNode(nodes["rlark-gpu-a/g043"], status={**template["status"], "used": {"nvidia.com/gpu": "3"}})
        ReadNode.read.clear()
        app.post_message(SnapshotChanged(replace(snapshot, nodes={**nodes, "rlark-gpu-a/g043": refreshed})))
        await settle(pilot)
        walked["snapshot"] = len(set(ReadNode.read))
        prompts = overlay_prompts(screen.query_one("#w-hardware", Select))
    assert (selector, hostile_roles[0].selector) == ("kubernetes.io/hostname=gpu-a1",
                                                     {"kubernetes.io/hostname": "gpu-a1"})
    assert (picked, hostile_roles[1].nodes) == ("gpu-a2", ("gpu-a2",))
    hold = "longer than the wizard's fields hold (16,384 characters a line, 65,536 a text box)"
    assert said == [f"Add a label: node selector would be 1,000,035 characters, {hold}: not picked",
                    f"Pick a Node: nodes would be 1,000,000 characters, {hold}: not picked"], said
    assert screen.draft.roles[1].hardware == "GPU-043" and screen.step == 2
    assert hint.startswith("actor: selector kubernetes.io/hostname=gpu-a1 matches 1 Node(s)"), hint
    assert "GPU-043  5/8 GPUs free · Nodes 1/1" in prompts, prompts[:3]
    assert max(walked.values()) <= 6, walked
    assert not any(derived.values()), derived
