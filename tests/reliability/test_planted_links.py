"""Every writer of rlark's goes through rlark_tui.local.fsutil: a link another user planted at any name it may touch
is never written through, and a directory that is not the user's own, or that others may write, is refused in one
line. The links are made by a real other uid (65534, through `setpriv`) in a sticky world-writable directory, as in
/tmp; the refusal of another user's directory uses one owned by 65534.

And the bounded reads of user-named inputs: `/dev/zero`, a FIFO that never ends and a FIFO that never sends.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import pytest

from rlark_tui.checks import records
from rlark_tui.checks.report import HandOver, HandOverKey
from rlark_tui.cluster import objects, podcopy
from rlark_tui.commands import status
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.jobspec.draft import JobDraft
from rlark_tui.local import acks, draft_files, fsutil
from rlark_tui.local.config import load_config
from rlark_tui.model.storage import Entry

OTHER = "65534"
NAMES = ("out", "report.md", "record.md", "draft.yaml", "w.pt", ".w.pt.noetag.rlark-part", "state", "checks",
         "drafts", "dest", "demo.log", acks.FILE_NAME, acks.SUMMARY)


def as_other(*argv: str) -> None:
    subprocess.run(["setpriv", f"--reuid={OTHER}", f"--regid={OTHER}", "--clear-groups", *argv], check=True)


@pytest.fixture
def planted(tmp_path):
    """(a sticky world-writable directory holding the other uid's link `<name> -> victim` at every name, the
    victim file, the victim directory)."""
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    victim_dir = tmp_path / "victim-dir"
    victim_dir.mkdir()
    shared = Path(tempfile.mkdtemp(prefix="rlark-shared-", dir="/tmp"))  # the other uid can reach it
    shared.chmod(0o1777)
    for name in NAMES:
        target = victim_dir if name in ("state", "checks", "drafts", "dest") else victim
        as_other("ln", "-s", str(target), str(shared / name))
    assert all((shared / name).lstat().st_uid == int(OTHER) for name in NAMES)
    yield shared, victim, victim_dir
    assert victim.read_text() == "mine\n" and os.listdir(victim_dir) == []
    try:
        assert sorted(os.listdir(shared)) == sorted(NAMES)  # nothing added, no link replaced by a file
    finally:
        shutil.rmtree(shared)


class NoCluster:
    """A download must be refused before any request."""

    def __getattr__(self, name):
        raise AssertionError(f"the cluster was asked ({name}) before the destination was checked")


def writers(where: Path) -> dict:
    """Every writer, each writing into `where` (the names in NAMES)."""
    entry = Entry(key="ckpt/w.pt", name="w.pt", folder=False, size=4, etag="")
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = tarfile.TarInfo("dest/f")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"x\n"))
    return {
        "write_private": lambda: fsutil.write_private(where / "out", "data\n"),
        "write_named (check --output, saved logs)": lambda: fsutil.write_named(where / "report.md", "data\n"),
        "check record --output": lambda: records.write_record(where / "record.md", "# record\n", named=True),
        "hand-over fields": lambda: records.save_hand_over(where / "state", HandOverKey("ctx", "job", "u"),
                                                           HandOver(notes="n")),
        "draft export": lambda: draft_files.export_draft(where / "draft.yaml", JobDraft()),
        "wizard autosave": lambda: draft_files.DraftStore(where / "state").save(JobDraft(), 2),
        "alert acks": lambda: acks.AckFile().acknowledge(where, "uid/rule/pod"),
        "alert summary": lambda: acks.write_summary(where, {"warning": 1}),
        "alert acks under a state dir link": lambda: acks.AckFile().acknowledge(where / "state", "uid/rule/pod"),
        "demo.log": lambda: fsutil.open_append(where / "demo.log"),
        "storage cp": lambda: objects.download(NoCluster(), "c", "gpu-a", entry, where / "w.pt"),
        "rlark cp": lambda: podcopy.extract(tarfile.open(fileobj=io.BytesIO(archive.getvalue())), "dest",
                                            str(where / "dest")),
    }


def test_no_writer_writes_through_another_users_link(planted):
    shared, _victim, _victim_dir = planted
    for what, write in writers(shared).items():
        with pytest.raises(RlarkError) as refused:
            write()
        message = str(refused.value)
        assert "\n" not in message and ("others may write" in message or "link" in message), (what, message)


def test_no_writer_writes_through_a_link_an_acl_let_another_user_plant(tmp_path):
    """Issue 33, a twenty-fourth round (generated directories by mode, owner and ACL, as a real second uid): a
    directory of the user's own, 0770 with the user's private group, whose POSIX ACL lets another uid write
    (`setfacl -m u:65534:rwx`, shown as the group bits, its mask), was trusted as closed to others; a link that uid
    planted was written through (the victim overwritten) and a state file it wrote was believed. Now refused."""
    import struct

    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    shared = Path(tempfile.mkdtemp(prefix="rlark-acl-", dir="/tmp"))
    shared.chmod(0o770)  # root's, its group root: the private group of the root running the suite
    try:
        acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in (
            (0x01, 7, 0xFFFFFFFF), (0x02, 7, int(OTHER)), (0x04, 0, 0xFFFFFFFF), (0x10, 7, 0xFFFFFFFF),
            (0x20, 0, 0xFFFFFFFF)))
        try:
            os.setxattr(shared, "system.posix_acl_access", acl)
        except OSError:
            pytest.skip("the file system keeps no POSIX ACL")
        for name in NAMES:
            as_other("ln", "-s", str(victim), str(shared / name))
        as_other("sh", "-c", f"echo '{{}}' > {shared / 'kept.json'}")
        for what, write in writers(shared).items():
            with pytest.raises(RlarkError) as refused:
                write()
            assert "others may write" in str(refused.value) or "link" in str(refused.value), (what, refused.value)
        with pytest.raises(PermissionError, match="others may write"):
            fsutil.read_own(shared / "kept.json", 100)
        assert victim.read_text() == "mine\n" and sorted(os.listdir(shared)) == sorted([*NAMES, "kept.json"])
    finally:
        shutil.rmtree(shared)


def test_a_group_writable_directory_of_ones_own_is_written_where_no_xattr_call_exists(tmp_path, monkeypatch):
    """The ACL read is Linux's (os.getxattr); on macOS, which has no such call, a 0770 directory of the user's
    private group is written as before, not an AttributeError out of every writer."""
    own = tmp_path / "own"
    own.mkdir()
    own.chmod(0o770)  # root's, its group root: the private group of the root running the suite
    monkeypatch.delattr(os, "getxattr")
    fsutil.write_private(own / "out", "data\n")
    assert (own / "out").read_text() == "data\n"


def test_storage_cp_from_the_gateway_into_another_users_links_writes_nothing(planted, rl, tmp_path):
    """A real download (the sandbox gateway's object, its ETag and part name) to a file and to a folder in a shared
    /tmp holding the other uid's links: one line each, nothing written there or through a link."""
    shared, _victim, _ = planted
    source = tmp_path / "w.pt"
    source.write_bytes(b"weights\n")
    assert rl("storage", "cp", str(source), "s3-rclone:planted-links/w.pt", "--cluster", "gpu-a").code == 0
    try:
        said = {dest: rl("storage", "cp", "s3-rclone:planted-links/w.pt", dest, "--cluster", "gpu-a")
                for dest in (str(shared / "w.pt"), f"{shared}/")}
        for dest, got in said.items():
            assert got.code in (1, 2) and got.out == "" and got.err.count("\n") == 1, (dest, got.err)
        assert said[str(shared / "w.pt")].err.startswith(f"error: refusing to write {shared / 'w.pt'}: ")
        assert "others may write" in said[str(shared / "w.pt")].err
        assert said[f"{shared}/"].err == f"error: object key 'w.pt' would be written outside {shared}\n"
    finally:
        rl("storage", "rm", "s3-rclone:planted-links/w.pt", "--cluster", "gpu-a", "--yes")


def test_a_directory_of_another_user_is_refused_in_one_line(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, int(OTHER), int(OTHER))
    for write in writers(theirs).values():
        with pytest.raises(RlarkError, match="belongs to uid 65534"):
            write()
    assert os.listdir(theirs) == []


def test_the_users_own_link_in_the_users_own_directory_still_names_its_file(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    fsutil.write_named(tmp_path / "link" / "report.md", "new\n")
    assert (tmp_path / "real" / "report.md").read_text() == "new\n"


def test_check_output_into_a_shared_tmp_refuses_and_leaves_the_links_target(planted):
    """`check --output /tmp/report.md` with another uid's link there: the record's writer refuses, in-process."""
    shared, victim, _ = planted
    with pytest.raises(RlarkError, match=f"^refusing to write {re.escape(str(shared / 'report.md'))}: "):
        records.write_record(shared / "report.md", "# record\n", named=True)
    assert victim.read_text() == "mine\n"


def test_sshkeys_add_dev_zero_ends_at_once_naming_the_bound(env, capsys):
    from rlark_tui.cli import main

    assert main(["--kubeconfig", "/nonexistent", "sshkeys", "add", "/dev/zero"]) == 2
    assert capsys.readouterr().err == "error: public key file /dev/zero: larger than 16 KiB\n"


def test_a_fifo_that_never_ends_stops_at_the_bound(tmp_path):
    fifo = tmp_path / "endless.pub"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"exec yes ssh-ed25519 > {fifo}"], stderr=subprocess.DEVNULL)
    try:
        with pytest.raises(UsageError, match=r"^public key file .*endless.pub: larger than 16 KiB$"):
            fsutil.read_input(str(fifo), "public key file", 16 * 1024)
    finally:
        writer.kill()
        writer.wait()


def test_a_fifo_that_never_sends_ends_at_the_idle_bound(tmp_path):
    fifo = tmp_path / "silent"
    os.mkfifo(fifo)
    held = threading.Event()

    def hold():
        with open(fifo, "wb"):
            held.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        with pytest.raises(UsageError, match=r"^draft .*silent: nothing came for 0.05 s \(the bound of a pipe\)$"):
            fsutil.read_input(str(fifo), "draft", 1 << 20, idle=0.05)
    finally:
        held.set()
        holder.join()



def test_a_resume_continues_only_the_part_file_this_rlark_made(tmp_path):
    entry = Entry(key="ckpt/w.pt", name="w.pt", folder=False, size=100, etag="abc")
    with fsutil.Destination(tmp_path / "w.pt", named=True) as dest:
        record, part, handle, have = objects._open_part(dest, entry)
        with handle:
            handle.write(b"x" * 9)  # what a cut download left
        objects._write_record(dest, record, part, open(tmp_path / part, "rb"))
        again = objects._open_part(dest, entry)
        again[2].close()
        assert (again[1], again[3]) == (part, 9)  # the same file: continued
        swapped = tmp_path / "swapped"
        swapped.write_bytes(b"x" * 9)
        os.replace(swapped, tmp_path / part)  # same name and size, another file
        fresh = objects._open_part(dest, entry)
        fresh[2].close()
        assert fresh[1] != part and fresh[3] == 0 and not (tmp_path / part).exists()
    assert oct((tmp_path / record).stat().st_mode & 0o777) == oct(0o600)


def _read_planted(state: Path) -> dict:
    """What each reader of rlark's state and config files makes of the files planted in `state`, and how long all
    of them took; `draft` the line the autosaved draft's load raised."""
    from rlark_tui.local import config
    from rlark_tui.raydash import bundle, diagnose

    started = time.monotonic()
    seen = {
        "kept": [diagnose.load_kept(state, job, context="ctx") is None for job in ("fifo-job", "zero-job", "forged-job")],
        "status": [status._read(state / name) for name in (status.cache_files(None)[0], "alerts-summary.json")],
        "acks": sorted(acks._read(state / acks.FILE_NAME)),
        "records": [r.job for r in records.list_records(state)],
        "hand-over": records.load_hand_over(state, HandOverKey("ctx", "forged-job", ""))[0].recorder,
        "last-check": bundle._last_check(state, "forged-job", "u-forged"),
        "views": config.load_views("ctx")[1].split(": ", 1)[-1],
        "seconds": time.monotonic() - started,
        "draft": None,
    }
    try:
        draft_files.DraftStore(state).load()
    except Exception as exc:
        seen["draft"] = f"{type(exc).__name__} {exc}"
    return seen


def test_state_files_another_user_planted_are_not_read(tmp_path, monkeypatch):
    """A state and config directory others may write (RLARK_STATE_DIR, RLARK_CONFIG under a shared /tmp), where
    another uid made the subdirectories and planted, at the names rlark keeps its own files: a FIFO (read_bytes and
    open waited for ever: `rlark diagnose` and tmux's `rlark status --tmux` hung), a link to /dev/zero (read_bytes
    filled memory) and forged documents (a kept diagnosis with a made-up first failure, a check record, hand-over
    fields, acknowledgements that silence alerts, view settings). Every reader treats each as absent, at once. The
    readers run in a thread of the test, as a second process once ran them: one that waits for a FIFO's writer or
    reads /dev/zero fails the test after 10 s (its thread is left waiting, a daemon)."""
    shared = Path(tempfile.mkdtemp(prefix="rlark-state-", dir="/tmp"))
    shared.chmod(0o1777)
    forged_diagnosis = json.dumps({"uid": "", "diagnosis": {"job": "forged-job"}})
    record = json.dumps({"job": "forged-job", "uid": "u-forged", "checkedAt": "2099-01-01",
                         "checks": [{"result": "pass"}]})
    kept = "diagnosis/ctx-$(printf ctx | sha256sum | cut -c1-10)"  # the context's kept failures (keyed_name)
    cache = status.cache_files(None)[0]  # the plain status's, for this KUBECONFIG
    plant = (f"cd {shared} && mkdir -m 777 diagnosis {kept} checks drafts views && mkfifo {kept}/fifo-job.json "
             f"&& ln -s /dev/zero {kept}/zero-job.json && echo '{forged_diagnosis}' > {kept}/forged-job.json "
             f"&& mkfifo {cache} && ln -s /dev/zero alerts-summary.json "
             f"&& echo '{{\"acks\": {{\"job-failed/x\": 4e9}}}}' > {acks.FILE_NAME} "
             f"&& echo '{record}' > checks/forged-job.json && mkfifo checks/forged-job.md "
             f"&& mkdir -m 777 checks/hand-over && echo '{{\"recorder\": \"mallory\"}}' > checks/hand-over/forged-job.json "
             f"&& mkfifo drafts/{draft_files.AUTOSAVE_NAME} && mkfifo views/ctx-$(printf ctx | sha256sum | cut -c1-10).json")
    as_other("sh", "-c", plant)
    monkeypatch.setenv("RLARK_STATE_DIR", str(shared))
    monkeypatch.setenv("RLARK_CONFIG", str(shared / "config.yaml"))
    try:
        read: list[object] = []

        def reading() -> None:
            try:
                read.append(_read_planted(shared))
            except Exception as exc:
                read.append(exc)

        reader = threading.Thread(target=reading, daemon=True)
        reader.start()
        reader.join(timeout=10)
        assert not reader.is_alive(), "the readers still wait for a planted FIFO or read a planted link to the end"
        (seen,) = read
        assert isinstance(seen, dict), repr(seen)
        draft = str(seen.pop("draft"))
        assert seen.pop("seconds") < 5
        assert seen == {"kept": [True, True, True], "status": [{}, {}], "acks": [], "records": [],
                        "hand-over": None, "last-check": None,
                        "views": "it is a special file in a directory others may write; the default view is shown (the "
                                 "next change replaces the file)"}
        assert re.fullmatch(rf"UsageError autosaved draft {re.escape(str(shared))}/drafts/wizard-autosave-\d+\.yaml: "
                            r"cannot read it \(the directory belongs to uid \d+, not to you\)", draft), draft
    finally:
        shutil.rmtree(shared)


def test_a_config_file_another_user_could_write_is_refused_in_one_line(tmp_path):
    """Issue 33, a ninth round, as a second local user: the config file says where the gateway, rlark-server and
    Ray are, with which headers and tokens, and the alert thresholds, and was read whoever could write it. Another
    uid's config in a shared directory (RLARK_CONFIG=/tmp/...) sent the operator's uploads and requests to their
    address and silenced every alert (`stall_minutes: 1e8`); so did the operator's own file left 0666, or one in a
    directory others may write. Each is now refused as ssh refuses its config, one line; absent is still absent."""
    forged = "gateway: https://127.0.0.1:1\nalerts:\n  stall_minutes: 100000000\n"
    shared = Path(tempfile.mkdtemp(prefix="rlark-config-", dir="/tmp"))
    shared.chmod(0o1777)
    as_other("sh", "-c", f"printf '{forged}' > {shared}/config.yaml")
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    (own / "loose.yaml").write_text(forged)
    (own / "loose.yaml").chmod(0o666)
    (own / "theirs.yaml").write_text(forged)
    os.chown(own / "theirs.yaml", int(OTHER), int(OTHER))
    (own / "mine.yaml").write_text("theme: light\n")
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    (open_dir / "mine.yaml").write_text("theme: light\n")
    try:
        said = {}
        for path in (shared / "config.yaml", own / "loose.yaml", own / "theirs.yaml", open_dir / "mine.yaml"):
            with pytest.raises(UsageError) as refused:
                load_config(path)
            said[f"{path.parent.name[:4]}/{path.name}"] = str(refused.value)
        assert all(text.count("\n") == 0 and text.startswith("config file ") for text in said.values())
        assert "others may write in the directory" in said["rlar/config.yaml"]
        assert said["own/loose.yaml"].endswith(": not read: others may write it (another user could have written it: "
                                               "keep it yours, mode 600, in a directory of your own)")
        assert ": not read: not a regular file of your own or root's (" in said["own/theirs.yaml"]
        assert "others may write in the directory" in said["open/mine.yaml"]
        assert load_config(own / "mine.yaml").theme == "light" and load_config(shared / "absent.yaml").exists is False
    finally:
        shutil.rmtree(shared)


def test_an_exec_plugin_of_a_kubeconfig_another_user_could_write_is_not_run(tmp_path, capsys):
    """Issue 33, a ninth round, as a second local user: a kubeconfig's exec plugin is a command rlark runs as the
    operator, and its answer (a cloud token) goes to the kubeconfig's server. A kubeconfig another uid wrote in a
    shared directory (KUBECONFIG=/tmp/...), or the operator's own left 0666, ran that uid's command: code as the
    operator. Its plugin is not run, one line; a plain context of such a file (no command) is read as before."""
    from rlark_tui.cli import main

    marker = tmp_path / "ran"
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
              "users": [{"name": "u", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                        "command": "touch", "args": [str(marker)]}}}],
              "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    tmp_path.chmod(0o755)
    shared = Path(tempfile.mkdtemp(prefix="rlark-kube-", dir="/tmp"))
    shared.chmod(0o1777)
    as_other("sh", "-c", f"printf '%s' '{json.dumps(config)}' > {shared}/config")
    loose = tmp_path / "loose"
    loose.write_text(json.dumps(config))
    loose.chmod(0o666)
    try:
        for path in (shared / "config", loose):
            assert main(["--kubeconfig", str(path), "get", "jobs"]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and err.startswith(f"error: kubeconfig {path}: its exec plugin is not run: ")
            assert "(another user could have written it: keep it yours, mode 600" in err and not marker.exists()
        config["users"] = [{"name": "u", "user": {"token": "t"}}]
        loose.write_text(json.dumps(config))
        assert main(["--kubeconfig", str(loose), "--request-timeout", "2", "get", "jobs"]) == 1
        assert "127.0.0.1:1" in capsys.readouterr().err
    finally:
        shutil.rmtree(shared)


READ_AS_OTHER = """
import sys
sys.path.insert(0, sys.argv[1])
from rlark_tui.local.fsutil import read_own
for path in sys.argv[2:]:
    try:
        print(read_own(path, 1000, closed=True).decode())
    except PermissionError as exc:
        print("refused:", exc.strerror)
"""


def test_an_administrators_kubeconfig_is_a_settings_file_its_users_may_run(tmp_path):
    """A bastion's shared kubeconfig is root's (0644 in a root directory), often with an exec plugin
    (`aws eks get-token`, kubelogin): ssh trusts root's files, and so does read_settings, for a user who is not root
    (uid 65534 here, a real second process). Another unprivileged uid's file, or root's that a group may write, is
    still refused."""
    root = str(Path(__file__).resolve().parents[2])
    shared = Path(tempfile.mkdtemp(prefix="rlark-admin-", dir="/tmp"))
    shared.chmod(0o755)
    try:
        for name, owner, mode in (("admin", 0, 0o644), ("daemon", 1, 0o644), ("loose", 0, 0o664)):
            (shared / name).write_text(f"{name}-config")
            os.chown(shared / name, owner, owner)
            (shared / name).chmod(mode)
        python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
        done = subprocess.run(["setpriv", f"--reuid={OTHER}", f"--regid={OTHER}", "--clear-groups", python, "-I",
                               "-c", READ_AS_OTHER, root, *(str(shared / n) for n in ("admin", "daemon", "loose"))],
                              capture_output=True, text=True, timeout=60, cwd="/tmp")
        assert done.stdout.splitlines() == ["admin-config", "refused: not a regular file of your own or root's",
                                            "refused: others may write it"], done.stdout + done.stderr
    finally:
        shutil.rmtree(shared)


def test_a_sandbox_state_dir_of_another_user_is_refused_before_anything_is_read_or_written(tmp_path, capsys):
    """`rlark sandbox --state-dir` on a directory another uid made in /tmp (0777), holding that uid's links at the
    names the sandbox keeps (its pid, ports, token, kubeconfig) and a FIFO at the token's: the sandbox wrote its pid
    through the link (replacing the named file), took the link's target as its token and made its TLS keys there.
    Now it refuses in one line, at once, and the named file is as it was. rlark's main runs in a thread of the test
    (a sandbox that went on to serve, or waited on the FIFO, would not end: the thread is left to the process)."""
    from rlark_tui.cli import main

    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    tmp_path.chmod(0o755)
    shared = Path(tempfile.mkdtemp(prefix="rlark-sandbox-", dir="/tmp"))
    os.chown(shared, int(OTHER), int(OTHER))
    shared.chmod(0o777)
    names = ("pid", "port", "server-port", "objects-port", "kubeconfig")
    as_other("sh", "-c", f"cd {shared} && mkfifo token && " + " && ".join(f"ln -s {victim} {n}" for n in names))
    try:
        ended: list[int] = []
        sandbox = threading.Thread(target=lambda: ended.append(main(["sandbox", "--no-agent", "--seed", "none",
                                                                     "--state-dir", str(shared)])), daemon=True)
        sandbox.start()
        sandbox.join(30)
        err = capsys.readouterr().err
        assert ended == [1], (sandbox.is_alive(), ended, err[-2000:])
        assert err.startswith(f"error: refusing to write {shared}/pid: ")
        assert "others may write" in err or "belongs to uid 65534" in err
        assert err.count("\n") == 1
        assert victim.read_text() == "mine\n"
        assert sorted(os.listdir(shared)) == sorted((*names, "token"))
    finally:
        shutil.rmtree(shared)


def test_a_bundle_that_is_a_fifo_or_a_directory_is_one_line_at_once(capsys):
    """`rlark --bundle /tmp/b.tar.gz` where another uid planted a FIFO at that name: tarfile's open waited for a
    writer for ever (the TUI never started, Ctrl-C aside). A bundle is a regular file, or one line, both in-process:
    the FIFO's in a thread, whose wait for a writer (were it to wait) ends when the test opens the FIFO after 10 s."""
    from rlark_tui.cli import main

    shared = Path(tempfile.mkdtemp(prefix="rlark-shared-", dir="/tmp"))
    shared.chmod(0o1777)
    fifo = shared / "b.tar.gz"
    as_other("mkfifo", str(fifo))
    try:
        ended: list[int] = []
        opening = threading.Thread(target=lambda: ended.append(main(["--bundle", str(fifo)])), daemon=True)
        opening.start()
        opening.join(10)
        waited = opening.is_alive()
        if waited:  # a writer comes and goes: the wait ends, and so does the thread
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            opening.join(10)
        assert (waited, ended, capsys.readouterr().err) == (
            False, [2], f"error: --bundle {fifo}: not a regular file (a FIFO)\n")
        assert (main(["--bundle", str(shared)]), capsys.readouterr().err) == (
            2, f"error: --bundle {shared}: is a directory\n")
    finally:
        shutil.rmtree(shared)


def test_a_file_name_of_255_bytes_is_written_with_its_temporary_and_part_names_within_the_limit(tmp_path):
    # 85 CJK characters are 255 bytes, a name any file system takes: the temporary name cut the name at 180
    # characters (540 bytes) and every writer failed with 'File name too long'
    name = "检" * 85
    fsutil.write_named(tmp_path / name, "data\n")
    assert (tmp_path / name).read_text() == "data\n"
    entry = Entry(key=f"ckpt/{name}", name=name, folder=False, size=100, etag="abc")
    with fsutil.Destination(tmp_path / name, named=True) as dest:
        record, part, handle, _ = objects._open_part(dest, entry)
        handle.close()
    assert {len(os.fsencode(n)) <= 255 for n in (record, part)} == {True}
    assert sorted(os.listdir(tmp_path)) == sorted([name, record, part])
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = tarfile.TarInfo(f"dest/{name}")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"x\n"))
    podcopy.extract(tarfile.open(fileobj=io.BytesIO(archive.getvalue())), "dest", str(tmp_path / "copied"))
    assert os.listdir(tmp_path / "copied") == [name] and (tmp_path / "copied" / name).read_text() == "x\n"


def test_rlarks_own_children_import_no_module_from_the_working_directory(tmp_path):
    """Issue 33, an eleventh round, as a second local user: `rlark status` (tmux's `#(rlark status --tmux)`) starts
    its refresher as `python -m rlark_tui`, and `-m` puts the working directory first on the child's sys.path, so
    a package `rlark_tui` another uid left in a shared directory the command ran in (/tmp, a tmux pane's cwd) ran as
    the operator. rlark's own Python children are started with -P (local/children.py)."""
    shared = Path(tempfile.mkdtemp(prefix="rlark-shared-", dir="/tmp"))
    shared.chmod(0o1777)
    marker = shared / "ran"
    try:
        source = shared / "planted.py"
        source.write_text(f"open({str(marker)!r}, 'a').write('planted')\n")
        as_other("mkdir", str(shared / "rlark_tui"))
        for name in ("__init__.py", "__main__.py"):
            as_other("cp", str(source), str(shared / "rlark_tui" / name))
        kubeconfig = tmp_path / "config"
        kubeconfig.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                              "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                              "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n")
        state = tmp_path / "state"
        lock = status.cache_files(str(kubeconfig))[1]
        env = {**os.environ, "RLARK_STATE_DIR": str(state), "RLARK_CONFIG": str(tmp_path / "none.yaml")}
        rlark = str(Path(sys.executable).parent / "rlark")
        done = subprocess.run([rlark, "--kubeconfig", str(kubeconfig), "status", "--tmux"], cwd=shared, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 30
        while (state / lock).exists() and not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # the refresher removes its lock when it ends
        assert not marker.exists(), "the planted rlark_tui ran as the operator"
        assert not (state / lock).exists(), "the refresher did not end"
    finally:
        shutil.rmtree(shared)


def test_state_files_of_ones_own_that_others_may_write_are_not_read():
    """Issue 33, an eighteenth round (state an older rlark, a `cp`, or a umask of 000 left): the one reader of
    rlark's own files refused another user's file and a directory others may write, but read a file of the user's
    own that others may write, in a state directory others may enter (0755, as platformdirs makes it). Another uid
    rewrote it in place: acknowledgements that silence a failed Job's alert, `rlark status --tmux`'s counts, a kept
    first failure naming another rank. rlark writes its files 0600; one others may write is treated as absent, as a
    planted one is."""
    shared = Path(tempfile.mkdtemp(prefix="rlark-own-", dir="/tmp"))
    try:
        shared.chmod(0o755)
        acked = shared / acks.FILE_NAME
        cache = shared / "status-cache.json"
        for path, text in ((acked, '{"acks": {}}'), (cache, '{"running": 0, "failed": 3, "time": 1}')):
            path.write_text(text)
            path.chmod(0o666)
        as_other("sh", "-c", f"echo '{{\"acks\": {{\"job-failed/prod\": 4e9}}}}' > {acked} && "
                             f"echo '{{\"running\": 9, \"failed\": 0, \"time\": 1}}' > {cache}")
        assert acks._read(acked) == {} and status._read(cache) == {}
    finally:
        shutil.rmtree(shared)
