"""The wizard reads the gateway only through the Snapshot (the reconciler's lookups subscription; the sandbox
tests' open_wizard waits for the real one): registered SSH keys are offered, storage classes checked, and a
missing gateway said beside the key picker.
"""

from __future__ import annotations

from dataclasses import replace

from rlark_tui.flow.messages import SnapshotChanged
from rlark_tui.flow.polls import GATEWAY_KEY, GatewayLookups
from rlark_tui.jobspec.draft import Mount
from rlark_tui.tui.app import RlarkApp
from wizard.helpers import ALICE_KEY, data_draft, message, offline_snapshot, open_offline


async def test_lookups_come_from_the_snapshot_while_subscribed(state):
    draft = data_draft()
    draft = replace(draft, ssh_public_key="", roles=(replace(draft.roles[0], mounts=(
        Mount(type="storage", storage_class="nas", target="/ckpt"),)),) + draft.roles[1:])
    app = RlarkApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_offline(pilot, draft)
        await screen.load(screen.draft, step=2)
        await pilot.pause()
        assert "cluster rlark-gpu-a has no storage class 'nas' (available: oss-standard)" in message(screen, "mounts")
        assert "storage classes in rlark-gpu-a: oss-standard" in message(screen, "mounts")

        await screen.load(screen.draft, step=3)
        await pilot.pause()
        screen.query_one("#w-ssh-pick").value = ALICE_KEY
        await pilot.pause()
        await pilot.pause()
        assert screen.draft.ssh_public_key == ALICE_KEY
        assert screen.query_one("#w-sshPublicKey").value == ALICE_KEY

        gone = replace(offline_snapshot(), lookups={GATEWAY_KEY: GatewayLookups(notes=("no gateway configured",))})
        app.post_message(SnapshotChanged(gone))
        await pilot.pause()
        assert message(screen, "ssh-pick") == "no gateway configured"
