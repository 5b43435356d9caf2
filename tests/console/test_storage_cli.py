"""`rlark storage ls|cp|rm` against the shared sandbox's gateway (the platform's storage file routes): the demo's
checkpoint layout (written by the demo workload's own writer) goes up with `cp`, is listed page by page, comes
back with a checksum that matches the listing, and is deleted; read-only refuses both mutations; curl sees what
`ls` shows."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess

import pytest

from rlark_sandbox.demo_workload import EXPERIMENT, write_checkpoint
from tests.clirun import cli_runner

PREFIX = "demo-ppo-console"


@pytest.fixture
def rlark(sandbox, capsys, env):
    return cli_runner(sandbox.kubeconfig, capsys)


@pytest.fixture
def checkpoint(tmp_path, rlark):
    """The demo's checkpoint of step 2 under s3-rclone:demo-ppo-console/ (uploaded by `rlark storage cp`)."""
    root = tmp_path / "out"
    write_checkpoint(root, 2, [0.5, 0.25, 0.125])
    files = {str(p.relative_to(root)): p for p in sorted(root.rglob("*")) if p.is_file()}
    for relative, path in files.items():
        up = rlark("storage", "cp", str(path), f"s3-rclone:{PREFIX}/{relative}")
        assert up.code == 0, up.err
        assert f"to s3-rclone:{PREFIX}/{relative} on gpu-a" in up.out
    yield files
    for relative in files:
        rlark("storage", "rm", f"s3-rclone:{PREFIX}/{relative}", "--yes")


def test_ls_pages_and_cp_checksum_matches_listing(rlark, checkpoint, tmp_path, sandbox):
    before = len(sandbox.unknown_routes)
    top = rlark("storage", "ls", "s3-rclone", "--cluster", "gpu-a")
    assert top.code == 0, top.err
    assert any(line.split()[0] == f"{PREFIX}/" for line in top.out.splitlines()[1:])

    listed = rlark("storage", "ls", f"s3-rclone/{PREFIX}", "--cluster", "rlark-gpu-a", "-r", "--page-size", "2")
    assert listed.code == 0, listed.err
    rows = {line.split()[0]: line.split() for line in listed.out.splitlines()[1:]}
    assert set(rows) == set(checkpoint)  # 4 objects over pages of 2: the marker was followed
    weights = f"{EXPERIMENT}/checkpoints/global_step_2/actor/model_state_dict/full_weights.pt"
    assert weights in rows

    dest = tmp_path / "down" / "new"
    got = rlark("storage", "cp", f"s3-rclone:{PREFIX}/{weights}", str(dest) + "/", "--cluster", "gpu-a")
    assert got.code == 0, got.err
    assert [oct(path.stat().st_mode & 0o777) for path in (dest.parent, dest)] == ["0o700", "0o700"]
    local = dest / "full_weights.pt"
    data = local.read_bytes()
    assert data == checkpoint[weights].read_bytes()
    assert f"sha256 {hashlib.sha256(data).hexdigest()}" in got.out
    md5 = hashlib.md5(data).hexdigest()
    assert f"md5    {md5}  matches the listing's ETag" in got.out
    assert rows[weights][-1] == f'"{md5}"'
    assert not list(dest.glob(".*.part"))
    assert sandbox.unknown_routes[before:] == []

    curl = shutil.which("curl")
    if curl:  # the same listing through the route, as any HTTP client sees it
        answer = subprocess.run(
            [curl, "-sS", "--cacert", str(sandbox.state_dir / "tls" / "ca.crt"), "-H",
             f"Authorization: Bearer {sandbox.token}",
             f"{sandbox.gateway}/api/v1/storage/storageclass/s3-rclone/gpu-a/list?prefix={PREFIX}/&delimiter="],
            capture_output=True, text=True, timeout=20, check=True).stdout
        assert f'"key": "{PREFIX}/{weights}"' in answer.replace('":"', '": "')


def test_readonly_refuses_upload_and_delete(rlark, checkpoint, tmp_path):
    relative = next(iter(checkpoint))
    before = rlark("storage", "ls", f"s3-rclone/{PREFIX}", "-r").out
    local = tmp_path / "new.bin"
    local.write_bytes(b"x")
    up = rlark("--readonly", "storage", "cp", str(local), f"s3-rclone:{PREFIX}/new.bin")
    rm = rlark("storage", "rm", f"s3-rclone:{PREFIX}/{relative}", "--yes", "--readonly")
    for result in (up, rm):
        assert result.code == 1 and "read-only mode: refusing" in result.err
        assert len(result.err.strip().splitlines()) == 1
    assert rlark("storage", "ls", f"s3-rclone/{PREFIX}", "-r").out == before


def test_rm_asks_and_errors_are_one_line(rlark, checkpoint, tmp_path, monkeypatch):
    relative = next(iter(checkpoint))
    monkeypatch.setattr("sys.stdin", None)
    refused = rlark("storage", "rm", f"s3-rclone:{PREFIX}/{relative}")
    assert refused.code == 1 and "pass --yes" in refused.err
    assert relative in rlark("storage", "ls", f"s3-rclone/{PREFIX}", "-r").out
    missing = rlark("storage", "cp", "s3-rclone:no/such/key", str(tmp_path))
    assert missing.code == 1 and missing.err.strip() == "error: no object s3-rclone:no/such/key on gpu-a"
    unknown = rlark("storage", "ls", "nope-class")
    assert unknown.code == 1 and "not listed by the gateway" in unknown.err
    both_local = rlark("storage", "cp", "a", "b")
    assert both_local.code == 2


def test_a_part_file_this_rlark_did_not_make_is_not_continued(rlark, checkpoint, tmp_path):
    weights = f"{EXPERIMENT}/checkpoints/global_step_2/actor/model_state_dict/full_weights.pt"
    data = checkpoint[weights].read_bytes()
    dest = tmp_path / "resume"
    dest.mkdir()
    planted = dest / f".w.pt.{hashlib.md5(data).hexdigest()[:16]}.part"  # the name older versions resumed
    planted.write_bytes(b"planted")
    got = rlark("storage", "cp", f"s3-rclone:{PREFIX}/{weights}", str(dest / "w.pt"))
    assert got.code == 0, got.err
    assert "resumed" not in got.out and "matches the listing's ETag" in got.out
    assert (dest / "w.pt").read_bytes() == data and planted.read_bytes() == b"planted"


def test_download_bounds_and_local_errors_are_one_line(rlark, checkpoint, tmp_path):
    weights = f"{EXPERIMENT}/checkpoints/global_step_2/actor/model_state_dict/full_weights.pt"
    big = rlark("storage", "cp", f"s3-rclone:{PREFIX}/{weights}", str(tmp_path / "w.pt"), "--max-size", "10")
    assert big.code == 1 and "more than the limit of 10 (--max-size)" in big.err
    assert len(big.err.strip().splitlines()) == 1 and not (tmp_path / "w.pt").exists()
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)  # another user's directory
    denied = rlark("storage", "cp", f"s3-rclone:{PREFIX}/{weights}", str(theirs / "w.pt"))
    assert denied.code == 1 and denied.err.startswith(f"error: refusing to write {theirs / 'w.pt'}: the directory "
                                                      "belongs to uid 65534"), denied.err
    assert len(denied.err.strip().splitlines()) == 1 and os.listdir(theirs) == []


def test_dropped_download_is_one_line_and_resumes(rlark, checkpoint, tmp_path, sandbox):
    weights = f"{EXPERIMENT}/checkpoints/global_step_2/actor/model_state_dict/full_weights.pt"
    data = checkpoint[weights].read_bytes()
    target = tmp_path / "w.pt"
    sandbox.objects.cut_after = 9  # the object endpoint drops the connection after 9 bytes
    try:
        cut = rlark("storage", "cp", f"s3-rclone:{PREFIX}/{weights}", str(target))
    finally:
        sandbox.objects.cut_after = None
    assert cut.code == 1 and len(cut.err.strip().splitlines()) == 1, cut.err
    assert "cut after 9 of" in cut.err and "run the same command again to resume" in cut.err
    assert not target.exists()
    again = rlark("storage", "cp", f"s3-rclone:{PREFIX}/{weights}", str(target))
    assert again.code == 0, again.err
    assert "resumed at byte 9" in again.out and "matches the listing's ETag" in again.out
    assert target.read_bytes() == data


def test_an_object_key_with_a_line_break_is_one_line_in_what_a_download_says(sandbox, tmp_path):
    # another uploader's key 'w.pt\nsha256 <forged>' (a file name may hold a line break; `rlark storage cp` refuses
    # it typed, the TUI's Storage screen downloads it from the listing) put a forged line in the download's notice
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.cluster.objects import download_to

    forged = "w.pt\nsha256 " + "0" * 64
    folder = sandbox.state_dir / "storage" / "s3-rclone" / "forge-keys"
    folder.mkdir(parents=True)
    (folder / forged).write_bytes(b"data")
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        one = download_to(access, "s3-rclone", "gpu-a", f"forge-keys/{forged}", str(tmp_path) + "/")
        whole = download_to(access, "s3-rclone", "gpu-a", "forge-keys/", str(tmp_path / "folder"))
    finally:
        access.close()
        shutil.rmtree(folder)
    for lines, where in ((one, tmp_path), (whole, tmp_path / "folder")):
        assert len(lines) == 1 and "\n" not in lines[0], lines
        assert lines[0].startswith(f"{where}/w.pt\\nsha256 {'0' * 64}: 4 bytes, sha256 "), lines
        assert (where / forged).read_bytes() == b"data"


def test_an_object_stored_with_a_content_encoding_is_saved_as_stored(sandbox, tmp_path):
    """Issue 33, a seventeenth round (left open by the sixteenth: an object another uploader stored with
    `Content-Encoding: gzip`, as S3 serves it): urllib3 inflated the body, so the download counted more bytes than
    listed and kept nothing ('more bytes came than the listed ...'), or a saved file that is not what is stored and
    whose md5 the ETag check was of the wrong bytes. The bytes are saved as stored, as the AWS CLI and rclone save
    them, and their md5 matches the ETag."""
    import gzip

    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.cluster.objects import download_to

    stored = gzip.compress(b"weights " * 4096)
    folder = sandbox.state_dir / "storage" / "s3-rclone" / "encoded"
    folder.mkdir(parents=True)
    (folder / "w.pt").write_bytes(stored)
    sandbox.objects.encodings["encoded/w.pt"] = "gzip"
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        lines = download_to(access, "s3-rclone", "gpu-a", "encoded/w.pt", str(tmp_path) + "/")
    finally:
        access.close()
        sandbox.objects.encodings.clear()
        shutil.rmtree(folder)
    assert lines == [f"{tmp_path}/w.pt: {len(stored)} bytes, sha256 {hashlib.sha256(stored).hexdigest()[:16]}…, "
                     "md5 matches the ETag"], lines
    assert (tmp_path / "w.pt").read_bytes() == stored


def test_an_object_key_with_dot_segments_reaches_no_other_route(sandbox):
    # issue 33, an eleventh round: an object key is anyone's text (another user's upload, a Job writing to the
    # bucket; S3 keeps 'a/../b' as it is), and the HTTP client resolves '..' in a path before sending it, so deleting
    # the key '../../../../../rlinf.io/v1alpha1/jobs/<job>' (`rlark storage rm`, the Storage screen's delete of a
    # listed object) sent DELETE /api/v1/rlinf.io/v1alpha1/jobs/<job> and deleted that Job
    from rlark_sandbox.store import NotFound
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.cluster.errors import ApiError, Unreachable
    from tests.tui.tui_factories import job_dict

    victim = job_dict("s33k-victim", stopped=True)
    sandbox.store.create("jobs", victim)
    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    said = []
    try:
        for key in ("../../../../../rlinf.io/v1alpha1/jobs/s33k-victim", "a/./../../../../../../rlinf.io/v1alpha1/jobs",
                    "x/.."):
            for call in (access.storage_delete, access.storage_object_url):
                with pytest.raises((ApiError, Unreachable)) as refused:
                    call("s3-rclone", "gpu-a", key)
                said.append(str(refused.value))
        assert sandbox.store.get("jobs", "s33k-victim") is not None
    finally:
        access.close()
        with contextlib.suppress(NotFound):
            sandbox.store.delete("jobs", "s33k-victim")
    assert all("'..'" in line and "\n" not in line for line in said), said


def test_ls_lines_up_keys_of_wide_characters_and_combining_marks(sandbox, rlark):
    # issue 33, an eleventh round: the listing padded a key by its length in code points, so a key of one
    # character and 100 combining marks (one column) pulled its size and date 100 columns left, under NAME
    folder = sandbox.state_dir / "storage" / "s3-rclone" / "wide-keys"
    folder.mkdir(parents=True)
    for name in ("e" + "\u0301" * 100, "作业作业", "plain"):
        (folder / name).write_bytes(b"data")
    try:
        listed = rlark("storage", "ls", "s3-rclone/wide-keys/", "--cluster", "gpu-a")
    finally:
        shutil.rmtree(folder)
    assert listed.code == 0, listed.err
    lines = listed.out.splitlines()
    from rlark_tui.text.sinks import cell_width
    assert len(lines) == 4 and {cell_width(line[:line.index("4 B")]) for line in lines[1:]} == {
        lines[0].index("SIZE") + len("SIZE") - len("4 B")}, lines


def _download_listed(sandbox, prefix: str, destination, folder) -> list[str]:
    """What downloading the sandbox's objects under `prefix` (as its listing answers them, `listed_as`) to
    `destination` says; then the listing is the store's again and the objects' `folder` goes."""
    from rlark_tui.cluster import ClusterAccess
    from rlark_tui.cluster.objects import download_to

    access = ClusterAccess.open(str(sandbox.kubeconfig), sandbox.context)
    try:
        return download_to(access, "s3-rclone", "gpu-a", prefix, str(destination))
    finally:
        access.close()
        sandbox.objects.listed_as.clear()
        shutil.rmtree(folder)


def test_two_keys_that_make_one_local_file_are_not_written_over_each_other(sandbox, tmp_path):
    """Issue 33, a fifteenth round (object keys as another uploader's text, downloaded to a local folder): S3 keeps
    `d/a//b` beside `d/a/b`, `d/A.pt` beside `d/a.pt`, and the composed and decomposed `é` apart, but each pair is
    one local file (the first anywhere, the others on macOS's or Windows's file system): a folder download (the
    Storage screen's `w`) wrote the second over the first and said both were downloaded, each with its sha256, so
    a key another user planted replaced the file the user meant to fetch. A key with an empty part is no local
    name; of two keys of one file name whatever the case or Unicode form, the first listed is written, and the
    line of the second says onto which key's file it would land."""

    folder = sandbox.state_dir / "storage" / "s3-rclone" / "one-file"
    (folder / "a").mkdir(parents=True)
    for name, data in (("a/b", b"the real one"), ("planted", b"planted"), ("A.pt", b"upper"), ("a.pt", b"lower"),
                       ("e\u0301.pt", b"decomposed"), ("\u00e9.pt", b"composed")):
        (folder / name).write_bytes(data)
    sandbox.objects.listed_as["one-file/a//b"] = "one-file/planted"
    lines = _download_listed(sandbox, "one-file/", tmp_path / "got", folder)
    got = tmp_path / "got"
    assert (got / "a" / "b").read_bytes() == b"the real one" and (got / "planted").read_bytes() == b"planted"
    assert sorted(path.name for path in got.iterdir()) == ["A.pt", "a", "e\u0301.pt", "planted"]
    assert [line for line in lines if line.startswith("skipped")] == [
        "skipped: object key 'one-file/a.pt' lands on the local file of 'one-file/A.pt' (one file name on a "
        "case-insensitive file system): not written",
        f"skipped: object key 'one-file/a//b' cannot be a local file name below {got}",
        "skipped: object key 'one-file/\u00e9.pt' lands on the local file of 'one-file/e\u0301.pt' (one file name on a "
        "case-insensitive file system): not written"], lines


def test_an_object_goes_to_stdout_alone_and_never_raw_to_a_terminal(sandbox, rlark, monkeypatch, tmp_path):
    """Issue 33: `rlark storage cp CLASS:KEY /dev/stdout` on a terminal wrote a stored object's bytes raw (another
    uploader's OSC 52 set the operator's clipboard, OSC 2 the window's title), and to a pipe its summary lines
    followed the object into the same stream. `-` is stdout, as for tar and `aws s3 cp`; the object is refused on a
    terminal (a named one too), in one line, before it is read; to a pipe it is alone on stdout; and a stdout
    appended to a file (`>> app.log`) is added to, where the download truncated it (the log lost)."""
    import io
    import pty
    import sys

    stored = b"hello \x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b]2;forged\x07 \xc2\x9b31m\n"
    folder = sandbox.state_dir / "storage" / "s3-rclone" / "raw-bytes"
    folder.mkdir(parents=True)
    (folder / "evil.txt").write_bytes(stored)
    master, slave = pty.openpty()
    try:
        for dest, where in (("-", "the terminal on stdout"), ("/dev/stdout", "the terminal on stdout"),
                            (os.ttyname(slave), f"the terminal {os.ttyname(slave)}")):
            with monkeypatch.context() as patched:
                patched.setattr(sys, "stdout", io.TextIOWrapper(open(slave, "wb", closefd=False)))  # noqa: SIM115
                refused = rlark("storage", "cp", "s3-rclone:raw-bytes/evil.txt", dest)
            assert (refused.code, refused.err) == (2, f"error: refusing to write binary output to {where}: redirect "
                                                      "it to a file or a pipe, or name a file\n"), dest
        os.set_blocking(master, False)
        with contextlib.suppress(BlockingIOError):
            assert b"\x1b" not in os.read(master, 4096)
        piped = io.BytesIO()
        with monkeypatch.context() as patched:
            patched.setattr(sys, "stdout", io.TextIOWrapper(piped))
            got = rlark("storage", "cp", "s3-rclone:raw-bytes/evil.txt", "-")
            sys.stdout.flush()
            written = piped.getvalue()
        assert got.code == 0 and written == stored, (got.err, written)
        assert got.err.startswith(f"-  {len(stored)} bytes\nsha256 "), got.err
        log = tmp_path / "app.log"  # `>> app.log`: the object is added to the shell's file, which it truncated
        log.write_bytes(b"kept\n")
        with open(log, "ab") as appended, monkeypatch.context() as patched:
            patched.setattr(sys, "stdout", io.TextIOWrapper(appended))
            assert rlark("storage", "cp", "s3-rclone:raw-bytes/evil.txt", "/dev/stdout").code == 0
            sys.stdout.flush()
        assert log.read_bytes() == b"kept\n" + stored
    finally:
        os.close(master)
        os.close(slave)
        shutil.rmtree(folder)


def test_a_key_no_file_name_can_hold_is_skipped_in_one_line_and_the_others_downloaded(sandbox, tmp_path):
    """Issue 33, a twenty-third round (file names made from cluster names, by generated object keys): a listing may
    name a key with a lone surrogate (JSON's `\\ud800`, which a hostile gateway may answer), which no file name
    holds: the folder download ended in a crash report (UnicodeEncodeError) and downloaded nothing after it. A key
    past the file system's 255 bytes a name is one line too."""

    folder = sandbox.state_dir / "storage" / "s3-rclone" / "no-name"
    folder.mkdir(parents=True)
    (folder / "planted").write_bytes(b"planted")
    (folder / "z.pt").write_bytes(b"kept")
    sandbox.objects.listed_as["no-name/a\ud800.pt"] = "no-name/planted"
    sandbox.objects.listed_as["no-name/" + "l" * 300] = "no-name/planted"
    lines = _download_listed(sandbox, "no-name/", tmp_path / "got", folder)
    got = tmp_path / "got"
    assert sorted(path.name for path in got.iterdir()) == ["planted", "z.pt"], lines
    assert f"skipped: object key 'no-name/a\\\\ud800.pt' cannot be a local file name below {got}" in lines, lines
    assert f"failed: cannot write {'l' * 300}: File name too long" in lines, lines  # past NAME_MAX: one line too
