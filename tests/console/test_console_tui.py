"""The console views in the TUI (Pilot, the shared sandbox over HTTPS): `:nodes` → enter on gpu-a1 shows
demo-ppo-actor-0 among its Workers and the reserved GPU (enter opens the Job); `:clusters` shows rlark-gpu-a with
GPUs free/total (enter filters `:nodes`); `:storage` browses to an object and downloads it to a typed path;
`:sshkeys` adds a key from a .pub file and deletes it after a confirmation; read-only refuses both key changes."""

from __future__ import annotations

import hashlib
import shutil
import subprocess

import pytest

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.flow.actions import Actions
from rlark_tui.screens.clusters import ClustersScreen
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.job_detail import JobDetailScreen
from rlark_tui.screens.node_detail import NodeDetailScreen
from rlark_tui.screens.nodes import NodeListScreen
from rlark_tui.screens.sshkeys import SSHKeysScreen
from rlark_tui.screens.storage import StorageScreen
from rlark_tui.screens.wizard_dialogs import PathScreen
from rlark_tui.tui.app import RlarkApp
from tests.pilot import press, wait_for
from tests.sandbox.helpers import raw


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def notes(app) -> str:
    return " | ".join(n.message for n in app._notifications)


@pytest.fixture
def access(sandbox, env):
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    yield access
    access.close()


async def _command(pilot, text: str) -> None:
    """`:text` and Enter, typed as a user does (each caller waits for the screen it opens)."""
    await press(pilot, "colon", *text, "enter")


async def _open_storage_class(pilot, app) -> None:
    """From the first snapshot: `:storage`, then the s3-rclone class of gpu-a opened."""
    await wait_for(pilot, lambda: app.index is not None, "the first snapshot")
    await _command(pilot, "storage")
    await wait_for(pilot, lambda: isinstance(app.screen, StorageScreen), "the storage view")
    await wait_for(pilot, lambda: "s3-rclone" in screen_text(app), "s3-rclone listed", show=screen_text)
    app.screen.query_one("#storage-class-table").select_key("s3-rclone|gpu-a")
    await pilot.press("enter")


async def test_node_detail_and_clusters(access):
    app = RlarkApp(access)
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_for(pilot, lambda: app.index is not None and app.index.nodes, "the Nodes")
        await _command(pilot, "nodes")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeListScreen), "the node list")
        app.screen.query_one("#node-table").select_key("rlark-gpu-a/gpu-a1")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeDetailScreen), "the node detail")
        await wait_for(pilot, lambda: "demo-ppo-actor-0" in screen_text(app), "demo-ppo-actor-0 on gpu-a1",
                       timeout=60, show=screen_text)
        text = screen_text(app)
        gpu = next(line for line in text.splitlines() if "nvidia.com/gpu " in line).split()
        assert gpu[-4:] == ["8", "8", "1", "7"]  # capacity, allocatable, reserved by the actor, free
        assert "NVIDIA H100 80GB HBM3" in text and "DiskPressure: no" in text
        worker = next(w for w in app.screen.detail.workers if w.name == "demo-ppo-actor-0")
        assert app.screen.query_one("#node-worker-table").select_key(worker.key)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), "the Job opened from its Worker")
        assert app.screen.job_name == "demo-ppo"

        await _command(pilot, "clusters")
        await wait_for(pilot, lambda: isinstance(app.screen, ClustersScreen), "the clusters view")
        await wait_for(pilot, lambda: "rlark-gpu-a" in screen_text(app), "rlark-gpu-a listed")
        row = next(line for line in screen_text(app).splitlines() if "rlark-gpu-a" in line)
        assert "3/3" in row and "NVIDIA H100 80GB HBM3" in row and "/24" in row
        app.screen.query_one("#cluster-table").select_key("rlark-edge-b")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeListScreen), "the nodes of rlark-edge-b")
        await wait_for(pilot, lambda: "edge-b1" in screen_text(app), "edge-b1 listed")
        assert "gpu-a1" not in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ClustersScreen), "back on :clusters")


async def test_storage_browse_and_download(access, sandbox, tmp_path, monkeypatch):
    """Browse to an object and download it, then a folder. Then, in the same view, another uploader's folder and
    object whose names hold a line break (`forged`): the folder forged a line under the title, and the object's key
    a line in the 'downloading …' notice (issue 33); each now stays on its line."""
    monkeypatch.setattr("rlark_tui.tui.console.PROGRESS_SECONDS", 0.0)  # say the progress at every chunk
    data = b"checkpoint-bytes" * 1000
    Actions(access).upload_object("s3-rclone", "gpu-a", "tui-browse/ckpt/model.pt", data)
    Actions(access).upload_object("s3-rclone", "gpu-a", "tui-browse/ckpt/actor/opt.bin", b"opt")
    forged = "a\nDownloaded: every object"
    forged_dir = sandbox.state_dir / "storage" / "s3-rclone" / "tui-forge" / forged
    forged_dir.mkdir(parents=True)
    (forged_dir / "x\ny.bin").write_bytes(b"x")
    app = RlarkApp(access)
    try:
        async with app.run_test(size=(150, 45)) as pilot:
            await _open_storage_class(pilot, app)
            for folder in ("tui-browse/", "tui-browse/ckpt/"):
                table = app.screen.query_one("#storage-folder-table")
                await wait_for(pilot, lambda folder=folder, table=table: folder in table.visible_keys, folder, show=screen_text)
                table.select_key(folder)
                await pilot.press("enter")
            table = app.screen.query_one("#storage-folder-table")
            await wait_for(pilot, lambda: "tui-browse/ckpt/model.pt" in table.visible_keys, "model.pt", show=screen_text)
            assert "15.6 KiB" in screen_text(app)
            table.select_key("tui-browse/ckpt/model.pt")
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, PathScreen), "the download path dialog")
            app.screen.query_one("Input").value = str(tmp_path / "got.pt")
            await pilot.press("enter")
            await wait_for(pilot, lambda: "md5 matches the ETag" in notes(app), "the download", show=notes)
            assert (tmp_path / "got.pt").read_bytes() == data
            assert "downloading tui-browse/ckpt/model.pt: 15.6 KiB of 15.6 KiB" in notes(app)
            assert hashlib.sha256(data).hexdigest()[:16] in notes(app)
            await pilot.press("backspace")
            table = app.screen.query_one("#storage-folder-table")
            await wait_for(pilot, lambda: "tui-browse/ckpt/" in table.visible_keys, "up one folder")
            table.select_key("tui-browse/ckpt/")
            await pilot.press("w")  # the whole folder, keys kept as paths below the chosen directory
            await wait_for(pilot, lambda: isinstance(app.screen, PathScreen), "the folder download dialog")
            app.screen.query_one("Input").value = str(tmp_path / "folder")
            await pilot.press("enter")
            copied = ("model.pt", "actor/opt.bin")   # each file appears whole (renamed from its part file)
            await wait_for(pilot, lambda: all((tmp_path / "folder" / name).exists() for name in copied),
                           "the folder copy", show=notes)
            assert (tmp_path / "folder" / "model.pt").read_bytes() == data
            assert (tmp_path / "folder" / "actor" / "opt.bin").read_bytes() == b"opt"
            await pilot.press("question_mark")  # the help screen lists the view's keys and the new commands
            await wait_for(pilot, lambda: "Download folder" in screen_text(app), "the help screen")
            help_text = screen_text(app)
            assert "Up a folder" in help_text and ":storage" in help_text and ":sshkeys" in help_text
            assert ":clusters" in help_text
            await pilot.press("escape")

            await pilot.press("backspace")  # up to the bucket's root: another uploader's folder
            for key in ("tui-forge/", f"tui-forge/{forged}/", f"tui-forge/{forged}/x\ny.bin"):
                table = app.screen.query_one("#storage-folder-table")
                await wait_for(pilot, lambda key=key, table=table: key in table.visible_keys, key, show=screen_text)
                table.select_key(key)
                await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, PathScreen), "the forged object's download dialog")
            app.screen.query_one("Input").value = str(tmp_path) + "/"
            await pilot.press("enter")
            await wait_for(pilot, lambda: any("y.bin" in n.message and "md5 matches the ETag" in n.message
                                              for n in app._notifications), "the forged object's download", show=notes)
            title = str(app.screen.query_one("#storage-title").render())
            assert title.startswith("s3-rclone on gpu-a: /tui-forge/a\\nDownloaded: every object/   (enter"), title
            assert not [line for line in screen_text(app).splitlines() if line.lstrip().startswith("Downloaded:")]
            assert not [n.message for n in app._notifications if "\n" in n.message], notes(app)
            assert (tmp_path / "x\ny.bin").read_bytes() == b"x"
    finally:
        Actions(access).delete_object("s3-rclone", "gpu-a", "tui-browse/ckpt/model.pt")
        Actions(access).delete_object("s3-rclone", "gpu-a", "tui-browse/ckpt/actor/opt.bin")
        shutil.rmtree(forged_dir.parent)


def _pub(tmp_path) -> str:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tui@test", "-f", str(key)], check=True,
                   timeout=20)
    return str(key) + ".pub"


async def test_sshkeys_add_then_delete(access, sandbox, tmp_path, monkeypatch):
    monkeypatch.setattr("getpass.getuser", lambda: "tui-user")
    pub = _pub(tmp_path)
    app = RlarkApp(access)
    async with app.run_test(size=(150, 45)) as pilot:
        await wait_for(pilot, lambda: app.index is not None, "the first snapshot")
        await _command(pilot, "sshkeys")
        await wait_for(pilot, lambda: isinstance(app.screen, SSHKeysScreen), "the SSH keys view")
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, PathScreen), "the .pub dialog")
        app.screen.query_one("Input").value = pub
        await pilot.press("enter")
        await wait_for(pilot, lambda: "tui-user" in screen_text(app), "the added key listed", show=screen_text)
        blob = open(pub).read().split()[1]
        assert [k["public_key"].split()[1] for k in raw(sandbox, "GET", "/api/v1/ssh-user-keys").json()
                if k["user"] == "tui-user"] == [blob]
        table = app.screen.query_one("#sshkey-table")
        table.select_key("tui-user\x1f0")
        await pilot.press("ctrl+d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: "tui-user" not in screen_text(app), "the key gone", show=screen_text)
        assert not [k for k in raw(sandbox, "GET", "/api/v1/ssh-user-keys").json() or [] if k["user"] == "tui-user"]


async def test_sshkeys_readonly_refuses(access, sandbox, tmp_path):
    Actions(access).add_ssh_key("ro-user", open(_pub(tmp_path)).read())
    app = RlarkApp(access, readonly=True)
    try:
        async with app.run_test(size=(150, 45)) as pilot:
            await wait_for(pilot, lambda: app.index is not None, "the first snapshot")
            await _command(pilot, "sshkeys")
            await wait_for(pilot, lambda: "ro-user" in screen_text(app), "ro-user listed")
            await pilot.press("a")
            await wait_for(pilot, lambda: "read-only mode: refusing to add an SSH key" in notes(app), "refusal")
            assert isinstance(app.screen, SSHKeysScreen)
            app.screen.query_one("#sshkey-table").select_key("ro-user\x1f0")
            await pilot.press("ctrl+d")
            await wait_for(pilot, lambda: "refusing to delete ro-user's key 0" in notes(app), "refusal")
            assert isinstance(app.screen, SSHKeysScreen)
    finally:
        Actions(access).delete_ssh_key("ro-user", 0)
    assert not [k for k in raw(sandbox, "GET", "/api/v1/ssh-user-keys").json() or [] if k["user"] == "ro-user"]
