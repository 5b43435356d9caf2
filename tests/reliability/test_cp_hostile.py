"""`rlark cp` from a hostile Pod cannot create or change anything outside its destination.

The Pod's PATH starts with a `tar` of its own (a Python script) that ignores its arguments and sends an archive the
test crafted with tarfile: a symlink chain (`s -> .`, `e1 -> s/..`, `e2 -> e1/..`, then `e2/x`), a hard link
through such a chain, a path through a link, a FIFO. `rlark` runs as a real process; each copy exits non-zero
naming the refused entry, and a snapshot of the destination's parent tree is unchanged. A symlink swapped into the
destination during extraction is not followed; an upload does not read outside its source.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tarfile

import pytest

from rlark_tui.cluster.podcopy import CopyRefused, extract, pack
from tests.clirun import cli_runner
from tests.pod.conftest import _role, wait_running

JOB = "hostile-cp"
POD = ("rlark-gpu-a", "hostile-cp-actor-0")


def snapshot(root) -> dict:
    """Every path under `root` (links not followed): its kind, link target or content hash, mode and mtime."""
    seen = {}
    for directory, dirs, files in os.walk(root):
        for entry in dirs + files:
            path = os.path.join(directory, entry)
            info = os.lstat(path)
            if os.path.islink(path):
                what = ("link", os.readlink(path))
            elif os.path.isfile(path):
                what = ("file", hashlib.sha256(open(path, "rb").read()).hexdigest())
            else:
                what = ("dir", "")
            seen[os.path.relpath(path, root)] = (*what, info.st_mode, info.st_mtime_ns, info.st_nlink)
    return seen


def entry(name: str, kind=tarfile.REGTYPE, link: str = "", data: bytes = b"owned\n") -> tuple:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o644
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def archive(*entries) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def hostile(plain_sandbox, tmp_path_factory):
    """Job `hostile-cp`, whose Pod's `tar` sends the bytes of `<bin>/archive.tar`; yields that path."""
    bin_dir = tmp_path_factory.mktemp("hostile-bin")
    (bin_dir / "tar").write_text(f"#!{sys.executable}\nimport sys\n"
                                 f"sys.stdout.buffer.write(open({str(bin_dir / 'archive.tar')!r}, 'rb').read())\n")
    (bin_dir / "tar").chmod(0o755)
    role = _role("actor", True, "gpu-a3")
    container = role["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    container["env"].append({"name": "PATH", "value": f"{bin_dir}:/usr/bin:/bin"})
    plain_sandbox.store.create("jobs", {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": JOB},
                                        "spec": {"tasks": [role]}})
    wait_running(plain_sandbox, *POD)
    yield bin_dir / "archive.tar"
    plain_sandbox.store.delete("jobs", JOB, "")


def rlark_cp(sandbox, *argv) -> subprocess.CompletedProcess:
    return subprocess.run(["timeout", "60", sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sandbox.kubeconfig),
                           "cp", *argv], capture_output=True, text=True, env=os.environ.copy())


CHAIN = (entry("loot/", tarfile.DIRTYPE), entry("loot/s", tarfile.SYMTYPE, "."),
         entry("loot/e1", tarfile.SYMTYPE, "s/.."), entry("loot/e2", tarfile.SYMTYPE, "e1/.."), entry("loot/e2/x"))


HARD = " (a hard link must name a file extracted before it)"
UP = ((entry("loot/", tarfile.DIRTYPE), entry("loot/f"), entry("loot/s", tarfile.SYMTYPE, "."),
       entry("loot/h", tarfile.LNKTYPE, "loot/s/../../victim")),
      "refusing archive link 'loot/h' -> 'loot/s/../../victim': it escapes the destination" + HARD)
THROUGH = ((entry("loot/", tarfile.DIRTYPE), entry("loot/f"), entry("loot/s", tarfile.SYMTYPE, "."),
            entry("loot/h", tarfile.LNKTYPE, "loot/s/f")),
           "refusing archive link 'loot/h' -> 'loot/s/f': it escapes the destination" + HARD)
PATH_LINK = ((entry("loot/", tarfile.DIRTYPE), entry("loot/l", tarfile.SYMTYPE, "."), entry("loot/l/x")),
             "refusing archive entry 'loot/l/x': it goes through a link (loot/l)")
FIFO = ((entry("loot/", tarfile.DIRTYPE), entry("loot/fifo", tarfile.FIFOTYPE)),
        "refusing archive entry 'loot/fifo': not a file, directory or link")


ORDERS = {  # each link harmless as it arrives; judged once every entry has arrived
    "a-to-p-up-then-p-to-dot": ((entry("loot/", tarfile.DIRTYPE), entry("loot/a", tarfile.SYMTYPE, "p/.."),
                                 entry("loot/p", tarfile.SYMTYPE, ".")),
                                "refusing archive link 'loot/a' -> 'p/..': it escapes the destination"),
    "link-to-dot-then-a-path-through-it": ((entry("loot/", tarfile.DIRTYPE), entry("loot/a", tarfile.SYMTYPE, "."),
                                            entry("loot/a/b", tarfile.SYMTYPE, "..")),
                                           "refusing archive link 'loot/a/b' -> '..': it goes through a link (loot/a)"),
    "a-directory-replaced-by-a-link": ((entry("loot/", tarfile.DIRTYPE), entry("loot/d/", tarfile.DIRTYPE),
                                        entry("loot/d/f"), entry("loot/d", tarfile.SYMTYPE, "..")),
                                       "refusing archive link 'loot/d' -> '..': the archive gives this path twice (it "
                                       "would replace a directory of the archive)"),
    "a-link-replaced-by-a-directory": ((entry("loot/", tarfile.DIRTYPE), entry("loot/d", tarfile.SYMTYPE, "e"),
                                        entry("loot/e/", tarfile.DIRTYPE), entry("loot/d/", tarfile.DIRTYPE)),
                                       "refusing archive entry 'loot/d': the archive gives this path twice (it would "
                                       "replace a directory of the archive)"),
}


@pytest.mark.parametrize("entries, refused", ORDERS.values(), ids=ORDERS.keys())
def test_every_crafted_order_is_refused_in_process(tmp_path, entries, refused):
    outer, before = _outer(tmp_path)
    with tarfile.open(fileobj=io.BytesIO(archive(*entries)), mode="r:") as tar:
        with pytest.raises(CopyRefused) as stopped:
            extract(tar, "loot", str(outer / "dest" / "loot"))
    assert str(stopped.value) == refused and snapshot(tmp_path) == before


def test_an_archive_that_never_ends_stops_at_the_bound(plain_sandbox, hostile, env, tmp_path, capsys):
    """In-process: the bound is the tar stream's spool, the same in any rlark process."""
    tar = hostile.parent / "tar"
    kept = tar.read_text()
    tar.write_text(f"#!{sys.executable}\nimport sys\nwhile True:\n    sys.stdout.buffer.write(bytes(65536))\n")
    try:
        outer, before = _outer(tmp_path)
        done = cli_runner(plain_sandbox.kubeconfig, capsys)("cp", f"{JOB}:/data/loot", str(outer / "dest"),
                                                            "--max-size", "1000000")
    finally:
        tar.write_text(kept)
    assert (done.code, done.err) == (1, f"error: copy from {POD[1]}:/data/loot stopped: the archive passed "
                                        "the bound of 1,000,000 bytes (--max-size); nothing was written\n")
    assert snapshot(tmp_path) == before


def _outer(tmp_path):
    outer = tmp_path / "outer"
    (outer / "dest").mkdir(parents=True)
    (outer / "victim").write_text("untouched\n")
    return outer, snapshot(tmp_path)


@pytest.mark.parametrize("entries, refused", [
    (CHAIN, "refusing archive link 'loot/e1' -> 's/..': it escapes the destination"), UP, FIFO,
], ids=["symlink-chain", "hard-link-up", "fifo"])
def test_a_hostile_tar_in_the_pod_writes_nothing_outside(plain_sandbox, hostile, env, tmp_path, entries, refused):
    hostile.write_bytes(archive(*entries))
    outer, before = _outer(tmp_path)
    done = rlark_cp(plain_sandbox, f"{JOB}:/data/loot", str(outer / "dest"))
    assert (done.returncode, done.stderr) == (1, f"error: {refused}\n"), done.stderr
    assert snapshot(tmp_path) == before


LONG = ((entry("loot/", tarfile.DIRTYPE), entry("loot/f"), entry("loot/" + "n" * 256)),
        "refusing archive entry 'loot/" + "n" * 256 + "': a name in its path is longer than 255 bytes")
EMPTY = ((entry("loot/", tarfile.DIRTYPE), entry("loot/f"), entry("loot/a", tarfile.SYMTYPE, "")),
         "refusing archive link 'loot/a' -> '': a link to nothing")


@pytest.mark.parametrize("entries, refused", [THROUGH, PATH_LINK, LONG, EMPTY],
                         ids=["hard-link-through-link", "path-through-link", "long-name", "link-to-nothing"])
def test_more_hostile_archives_refused_in_process(tmp_path, entries, refused):
    outer, before = _outer(tmp_path)
    with tarfile.open(fileobj=io.BytesIO(archive(*entries)), mode="r:") as tar:
        with pytest.raises(CopyRefused) as stopped:
            extract(tar, "loot", str(outer / "dest" / "loot"))
    assert str(stopped.value) == refused and snapshot(tmp_path) == before


def test_a_link_swapped_in_during_extraction_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"

    class Swapping(tarfile.TarFile):
        """Another process swaps `dest/sub` for a link to `outside` once the first file is being written."""

        swapped = False

        def extractfile(self, member):
            if not Swapping.swapped and member.name == "d/first":
                Swapping.swapped = True
                os.rmdir(dest / "sub")
                os.symlink(outside, dest / "sub")
            return super().extractfile(member)

    data = archive(entry("d/", tarfile.DIRTYPE), entry("d/sub/", tarfile.DIRTYPE), entry("d/first"),
                   entry("d/sub/x"))
    with Swapping.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        with pytest.raises(CopyRefused, match=r"^refusing archive entry 'd/sub/x': 'sub' on the way is a link"):
            extract(tar, "d", str(dest))
    assert Swapping.swapped and os.listdir(outside) == []


def test_an_upload_reads_nothing_outside_its_source(tmp_path):
    src = tmp_path / "src"
    (src / "in").mkdir(parents=True)
    (src / "in" / "a").write_text("a\n")
    os.symlink("in/a", src / "inside-link")
    (tmp_path / "secret").write_text("not for the Pod\n")
    with tarfile.open(fileobj=io.BytesIO(), mode="w") as tar:
        pack(tar, str(src), "src")
        assert sorted(tar.getnames()) == ["src", "src/in", "src/in/a", "src/inside-link"]
    os.symlink("../secret", src / "out-link")
    with tarfile.open(fileobj=io.BytesIO(), mode="w") as tar, \
            pytest.raises(CopyRefused, match=r"refusing to send link .*out-link -> \.\./secret: it points outside"):
        pack(tar, str(src), "src")


def test_modes_from_the_archive_are_cut_by_the_umask(tmp_path):
    """A Pod's 0777 or setuid file lands as tar lands it for a user who is not root: the umask applies, so no
    file is left writable by the bastion's other users."""
    loose, setuid = entry("loot/loose"), entry("loot/setuid")
    loose[0].mode, setuid[0].mode = 0o777, 0o4775
    old = os.umask(0o027)
    try:
        with tarfile.open(fileobj=io.BytesIO(archive(entry("loot", tarfile.DIRTYPE), loose, setuid))) as tar:
            extract(tar, "loot", str(tmp_path / "loot"))
    finally:
        os.umask(old)
    assert oct(os.stat(tmp_path / "loot" / "loose").st_mode & 0o7777) == oct(0o750)
    assert oct(os.stat(tmp_path / "loot" / "setuid").st_mode & 0o7777) == oct(0o750)


def test_a_fifo_swapped_in_for_a_file_of_an_upload_is_refused_at_once(tmp_path, monkeypatch):
    """`rlark cp SRC JOB:/path` of a directory another user can write in: a FIFO swapped in for a regular file
    between pack's look at it and its open made the open wait for a writer for ever. The open does not wait; the
    swap is found by the inode check and refused."""
    import threading

    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_text("a\n")
    real_stat = os.stat

    def stat_then_swap(path, *args, **kwargs):
        info = real_stat(path, *args, **kwargs)
        if path == "a" and not (src / "a").is_fifo():
            os.unlink(src / "a")
            os.mkfifo(src / "a")
        return info

    monkeypatch.setattr(os, "stat", stat_then_swap)
    outcome: list[BaseException | None] = []

    def upload() -> None:
        try:
            with tarfile.open(fileobj=io.BytesIO(), mode="w") as tar:
                pack(tar, str(src), "src")
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=upload, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():  # let the waiting open go before failing
        os.close(os.open(src / "a", os.O_WRONLY | os.O_NONBLOCK))
        worker.join(5)
        pytest.fail("the upload waited on a FIFO swapped in for a file")
    assert isinstance(outcome[0], CopyRefused) and str(outcome[0]).endswith("it changed while being read")


def sparse_archive() -> bytes:
    """A tar whose one file `loot` is sparse (PAX sparse headers, as `tar -S` writes): 1 byte sent, 1 TiB claimed."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("loot")
        info.size = 1
        info.pax_headers = {"GNU.sparse.size": str(1 << 40), "GNU.sparse.map": f"{(1 << 40) - 1},1"}
        tar.addfile(info, io.BytesIO(b"x"))
    return buffer.getvalue()


def test_a_sparse_file_is_bounded_by_what_it_would_write_not_by_its_archive(tmp_path):
    """Issue 33 item 2, a sixth round: a Pod's tar that says a file is sparse (GNU or PAX sparse headers, `tar -S`)
    sends 10 KB that extract to the size it claims, the holes written as zeros: 1 TiB here, past any disk, while
    the bound (`--max-size`) held only the archive. The files' sizes count against the bound: the archive is
    refused in one line naming it, before anything is written."""
    sparse = sparse_archive()
    assert len(sparse) < 16 << 10
    outer, before = _outer(tmp_path)
    with tarfile.open(fileobj=io.BytesIO(sparse), mode="r:") as tar:
        with pytest.raises(CopyRefused) as stopped:
            extract(tar, "loot", str(outer / "dest" / "loot"), max_bytes=1 << 30)
    assert str(stopped.value) == ("refusing archive entry 'loot': its files come to more than the bound of "
                                  "1 GiB (--max-size); nothing was written")
    assert snapshot(tmp_path) == before


def test_a_copy_to_stdout_is_the_checked_archive_on_a_pipe_and_refused_on_a_terminal(plain_sandbox, hostile, env,
                                                                                     tmp_path, capsysbinary,
                                                                                     monkeypatch):
    """Issue 33 (O33a item 4): `rlark cp JOB:/path -` extracted the Pod's archive into a directory named `-` in the
    working directory. `-` is stdout, as `docker cp CONTAINER:/path -` takes it: the archive, judged whole as any
    copy's is, on a pipe, the command's line on stderr; on a terminal it is refused in one line before anything is
    read (the Pod's bytes would reach it raw: a file holding an OSC 52 sets the clipboard); a hostile archive
    writes nothing to stdout. The pipe's runs are in-process (the capture is no terminal); the terminal's is a real
    process on a pty."""
    import pty

    from rlark_tui.cli import main

    def to_pipe() -> tuple[int, bytes, str]:
        code = main(["--kubeconfig", str(plain_sandbox.kubeconfig), "cp", f"{JOB}:/data/loot", "-"])
        captured = capsysbinary.readouterr()
        return code, captured.out, captured.err.decode()

    monkeypatch.chdir(tmp_path)
    hostile.write_bytes(archive(entry("loot/", tarfile.DIRTYPE), entry("loot/f", data=b"\x1b]52;c;ZXZpbA==\x07\n")))
    code, out, err = to_pipe()
    assert (code, err) == (0, f"copied {POD[1]}:/data/loot to - (2 entries)\n")
    with tarfile.open(fileobj=io.BytesIO(out), mode="r:") as tar:
        assert [(m.name, tar.extractfile(m).read() if m.isfile() else None) for m in tar] == [
            ("loot", None), ("loot/f", b"\x1b]52;c;ZXZpbA==\x07\n")]
    argv = ["timeout", "60", sys.executable, "-m", "rlark_tui", "--kubeconfig", str(plain_sandbox.kubeconfig), "cp",
            f"{JOB}:/data/loot", "-"]
    master, slave = pty.openpty()
    try:
        done = subprocess.run(argv, stdout=slave, stderr=subprocess.PIPE, cwd=tmp_path, env=os.environ.copy())
        os.set_blocking(master, False)
        try:
            shown = os.read(master, 65536)
        except BlockingIOError:
            shown = b""
    finally:
        os.close(master)
        os.close(slave)
    assert (done.returncode, done.stderr.decode(), shown) == (
        2, "error: refusing to write binary output to the terminal on stdout: redirect it to a file or a pipe, or "
           "name a file\n", b"")
    hostile.write_bytes(archive(*CHAIN))
    assert to_pipe() == (1, b"", "error: refusing archive link 'loot/e1' -> 's/..': it escapes the destination\n")
    assert list(tmp_path.iterdir()) == []
