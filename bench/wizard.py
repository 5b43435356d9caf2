"""wizard_change_ms_p95: a change in the create-job wizard over 10,000 Nodes of 10,000 GPU models (issue 33): the
UI thread's CPU time from a field's new value until the app is idle with the screen drawn (Pilot.pause, whose own
wait is some 25 ms of it), 95th percentile of 40 changes (12 quick): a placed role's worker count and its image in
turn, after one of each as a warm-up, each step shown once before (steps are mounted when first shown). No cluster:
the Nodes come as a Snapshot, as the reconciler delivers them.

wizard_open_cpu_ms: opening that wizard on its three-role draft (`n`, clone and edit open it so), the UI thread's CPU
time from the push until the app is idle with its first frame drawn, median of 9 opens (5 quick) after one as a
warm-up, each closed before the next."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from statistics import median

from bench.harness import percentile

NODES = 10_000


def node(number: int) -> dict:
    name = f"g{number:05}"
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Node",
            "metadata": {"name": name, "namespace": "rlark-gpu-a", "annotations": {"rlark.io/gpu-model": f"GPU-{number:05}"},
                         "labels": {"kubernetes.io/hostname": name, "rlark.io/cluster-id": "rlark-gpu-a", "pool": "a"}},
            "status": {"phase": "Online", "allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}}}


async def _measure(changes: int, opens: int) -> tuple[list[float], list[float]]:
    from textual.widgets import Input

    from rlark_tui.flow.messages import SnapshotChanged
    from rlark_tui.flow.snapshot import Snapshot
    from rlark_tui.jobspec.draft import JobDraft, RoleDraft
    from rlark_tui.screens.wizard import WizardScreen
    from rlark_tui.tui.app import RlarkApp

    nodes = {f"rlark-gpu-a/g{n:05}": node(n) for n in range(NODES)}
    draft = JobDraft(name="bench-wizard", type="rl", header="Actor", run_script="python train.py",
                     roles=(RoleDraft(name="Actor", cluster="rlark-gpu-a", selector={"kubernetes.io/hostname": "g00001"}),
                            RoleDraft(name="Rollout", cluster="rlark-gpu-a", hardware="GPU-00042", workers=1, gpu=4),
                            RoleDraft(name="Environment", cluster="rlark-gpu-a", selector={"pool": "b"})))
    app = RlarkApp(None)
    spent, opened = [], []
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(SnapshotChanged(Snapshot(nodes=nodes)))
        await pilot.pause()
        for _ in range(opens + 1):
            started = time.thread_time()
            await app.push_screen(WizardScreen(draft))
            await pilot.pause()
            opened.append((time.thread_time() - started) * 1000)
            app.pop_screen()
            await pilot.pause()
        screen = WizardScreen(draft)
        await app.push_screen(screen)
        await pilot.pause()
        for field in ("runScript", "preview", "roles[1].workers"):  # every step mounted, as a change found them before
            await screen.jump_to(field)
        await pilot.pause()
        for change in range(changes + 2):
            widget = screen.query_one("#w-workers" if change % 2 else "#w-image", Input)
            value = str(1 + change % 4) if change % 2 else f"registry.example.com/rlinf:{change}"
            started = time.thread_time()
            widget.value = value
            await pilot.pause()
            spent.append((time.thread_time() - started) * 1000)
        assert screen.draft.roles[1].hardware == "GPU-00042" and screen.draft.roles[1].image.endswith(f":{changes}")
    return spent[2:], opened[1:]


def run(workdir: Path, quick: bool) -> dict[str, float]:
    spent, opened = asyncio.run(_measure(12 if quick else 40, 5 if quick else 9))
    return {"wizard_change_ms_p95": round(percentile(spent, 95), 1), "wizard_open_cpu_ms": round(median(opened), 1)}
