"""`rlark cp` (tar over exec, like kubectl cp): a file and a directory round trip, into an existing directory,
archive entries that would escape the destination refused before anything is written, --readonly, usage.
"""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from rlark_tui.cluster.podcopy import CopyRefused, extract
from rlark_tui.cluster.podexec import run_command
from rlark_tui.commands.pod import copied_line
from tests.pod.conftest import HEAD, JOB


def test_file_round_trip(run, tmp_path):
    data = os.urandom(300_000)
    (tmp_path / "weights.bin").write_bytes(data)
    code, out, err = run("cp", str(tmp_path / "weights.bin"), f"{JOB}:/tmp/rlark-cp-test.bin")
    assert code == 0 and out.startswith(b"copied "), err
    code, _, err = run("cp", f"{JOB}:shell-actor-0:/tmp/rlark-cp-test.bin", str(tmp_path / "back.bin"))
    assert code == 0, err
    assert (tmp_path / "back.bin").read_bytes() == data


def test_the_copied_line_names_a_hostile_pod_on_one_line():
    """A Pod CR's podName is the data plane's text: 'w-0<LF>copied /etc/shadow to ...' forged a second line, and a
    bidi override reached the terminal raw (the sandbox runs no Pod of such a name, so the line is built here)."""
    pod = "w-0\ncopied /etc/shadow to /tmp/x (1 entries)\u202e"
    line = copied_line(f"{pod}:/ckpt", "out/ckpt", "3 entries")
    assert line.splitlines() == [line]
    assert line == "copied w-0\\ncopied /etc/shadow to /tmp/x (1 entries)\\u202e:/ckpt to out/ckpt (3 entries)"


def test_directory_round_trip_into_directories(run, access, tmp_path):
    src = tmp_path / "ckpt"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("alpha\n")
    (src / "sub" / "b.txt").write_text("beta\n")
    os.symlink("a.txt", src / "link")
    run_command(access, *HEAD, ["sh", "-c", "rm -rf /tmp/rlark-cp-dir && mkdir -p /tmp/rlark-cp-dir"])
    assert run("cp", str(src), f"{JOB}:/tmp/rlark-cp-dir")[0] == 0
    listing = run_command(access, *HEAD, ["sh", "-c", "cd /tmp/rlark-cp-dir && find . | sort && cat ckpt/sub/b.txt"])
    assert listing.stdout.decode().split() == [".", "./ckpt", "./ckpt/a.txt", "./ckpt/link", "./ckpt/sub",
                                               "./ckpt/sub/b.txt", "beta"]
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run("cp", f"{JOB}:/tmp/rlark-cp-dir/ckpt", str(out))
    assert code == 0, err
    assert (out / "ckpt" / "sub" / "b.txt").read_text() == "beta\n"
    assert os.readlink(out / "ckpt" / "link") == "a.txt"


def test_escaping_link_refused(run, access, tmp_path):
    run_command(access, *HEAD, ["sh", "-c", "rm -rf /tmp/rlark-evil && mkdir /tmp/rlark-evil && "
                                            "echo ok > /tmp/rlark-evil/fine && ln -s ../../../../etc/passwd "
                                            "/tmp/rlark-evil/evil"])
    assert run("cp", f"{JOB}:/tmp/rlark-evil", str(tmp_path / "got")) == (1, b"", (
        "error: refusing archive link 'rlark-evil/evil' -> '../../../../etc/passwd': it escapes the destination\n"))
    assert not (tmp_path / "got").exists()


def _tar(*entries: tarfile.TarInfo) -> tarfile.TarFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for entry in entries:
            tar.addfile(entry, io.BytesIO(b"x" * entry.size) if entry.isfile() else None)
    buffer.seek(0)
    return tarfile.open(fileobj=buffer, mode="r:")


def _entry(name: str, kind=tarfile.REGTYPE, link: str = "", size: int = 1) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, size if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize("entry, message", [
    (_entry("d/../../escape"), "it is outside 'd'"),
    (_entry("/etc/cron.d/x"), "it is outside 'd'"),
    (_entry("other/file"), "it is outside 'd'"),
    (_entry("d/abs", tarfile.SYMTYPE, "/etc/passwd"), "escapes the destination"),
    (_entry("d/up", tarfile.LNKTYPE, "d/../../x"), "escapes the destination"),
    (_entry("d/dev", tarfile.CHRTYPE), "not a file, directory or link"),
])
def test_archive_entries_that_escape(tmp_path, entry, message):
    with pytest.raises(CopyRefused, match=message):
        extract(_tar(_entry("d", tarfile.DIRTYPE), _entry("d/ok"), entry), "d", str(tmp_path / "dest"))
    assert not (tmp_path / "dest").exists()


def test_readonly_and_usage(run, tmp_path):
    (tmp_path / "f").write_text("x")
    assert run("--readonly", "cp", str(tmp_path / "f"), f"{JOB}:/tmp/f") == (
        1, b"", "error: read-only mode: refusing to copy files to or from a Pod (cp) (started with --readonly)\n")
    code, _, err = run("cp", str(tmp_path / "f"), str(tmp_path / "g"))
    assert code == 2 and "one side of rlark cp must be in a Pod" in err
