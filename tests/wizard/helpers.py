"""Helpers of the wizard's Pilot tests: open the wizard on a live RlarkApp (sandbox) or on an offline one fed
the Snapshot of tests/wizard/data, and wait for what a user would see."""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from rlark_tui.flow.messages import SnapshotChanged
from rlark_tui.flow.polls import GATEWAY_KEY, GatewayLookups
from rlark_tui.flow.snapshot import Snapshot
from rlark_tui.jobspec.draft import load_draft
from rlark_tui.screens.wizard import WizardScreen
from rlark_tui.tui.app import RlarkApp
from tests.pilot import drained

SIZE = (120, 40)


async def until(pilot, condition, timeout: float = 10.0, what: str = "condition") -> None:
    """Pause the Pilot until `condition()` is true (live data arrives through the reconciler's watch)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


async def open_wizard(pilot, draft=None) -> WizardScreen:
    """Wait for the first snapshot (Nodes, Jobs, Domains), push the wizard and let it settle."""
    app = pilot.app
    await until(pilot, lambda: app.index is not None and app.index.nodes, what="the first snapshot")
    screen = WizardScreen(draft)
    await app.push_screen(screen)
    await pilot.pause()
    await until(pilot, lambda: screen.gateway_note != "gateway: loading…", what="the gateway")
    await pilot.pause()
    return screen


def message(screen, key: str) -> str:
    """The text beside the field `key` (the `#m-<key>` area)."""
    return str(screen.query_one(f"#m-{key}").render())


def new_app(access, readonly: bool = False) -> RlarkApp:
    return RlarkApp(access, readonly=readonly)


async def settle(pilot, rounds: int = 1) -> None:
    """What the last input set off is done, `rounds` times over: its messages handled (tests/pilot.drained), the
    workers it started (the process idle, Pilot.pause, which also draws the screen) and the messages they posted.
    It was three Pilot pauses, each queueing a callback on every one of the wizard's widgets and waiting for an
    idle process, which took half of a wizard test's time."""
    for _ in range(rounds):
        await drained(pilot.app)
        await pilot.pause()
    await drained(pilot.app)


DIGEST = "@sha256:" + "0123456789abcdef" * 4
IMAGE = "registry.rlark.local/wizard-invalid-pull/rlinf" + DIGEST
"""A pinned image the sandbox agent fails to pull on purpose (`invalid`), so no test Job starts real Ray."""


def base_draft(name: str = "wiz-base"):
    """A valid three-role RL draft for the demo sandbox (two clusters, hence the domain)."""
    from rlark_tui.jobspec.draft import JobDraft, RoleDraft

    def role(role_name: str, cluster: str, host: str, gpu: int = 0) -> RoleDraft:
        return RoleDraft(name=role_name, cluster=cluster, selector={"kubernetes.io/hostname": host}, gpu=gpu,
                         image=IMAGE)

    return JobDraft(name=name, type="rl", header="Actor",
                    roles=(role("Actor", "rlark-gpu-a", "gpu-a3", 1), role("Rollout", "rlark-gpu-a", "gpu-a2", 1),
                           role("Environment", "rlark-edge-b", "edge-b2")),
                    domain="demo-net", run_script="cd /workspace && python train.py")


def focused_id(app) -> str:
    return getattr(app.focused, "id", "") or ""


DATA = Path(__file__).resolve().parent / "data"
ALICE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHXg0Mu1Gs4+0nYJ8c2b8pI1l7lRk1vT0H1uHj8yqf3L alice@bastion"


def data_draft():
    """The valid three-role draft of tests/wizard/data over its Nodes."""
    return load_draft((DATA / "draft-rl.yaml").read_text())[0]


def offline_snapshot() -> Snapshot:
    """Nodes, a Domain and the gateway lookups, as the reconciler publishes them to a subscribed wizard."""
    items = yaml.safe_load((DATA / "nodes.yaml").read_text())["items"]
    nodes = {f"{n['metadata']['namespace']}/{n['metadata']['name']}": n for n in items}
    lookups = GatewayLookups(storage_classes={"rlark-gpu-a": ["oss-standard"], "rlark-edge": []},
                             ssh_keys=({"user": "alice", "public_key": ALICE_KEY},))
    return Snapshot(nodes=nodes, domains={"team-a": {}}, lookups={GATEWAY_KEY: lookups})


async def open_offline(pilot, draft=None) -> WizardScreen:
    """Deliver offline_snapshot() to an app without a cluster and push the wizard on `draft`."""
    pilot.app.post_message(SnapshotChanged(offline_snapshot()))
    await pilot.pause()
    screen = WizardScreen(draft)
    await pilot.app.push_screen(screen)
    await pilot.pause()
    return screen
