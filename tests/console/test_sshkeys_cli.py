"""`rlark sshkeys add|list|delete` round-trips against the shared sandbox's gateway, and the route the web console's
SSH keys page reads (`GET /api/v1/ssh-user-keys`, SSHKeys.tsx) shows the same key; a key made by ssh-keygen when
there is one (else by cryptography); bad files are refused before anything is sent; read-only refuses both."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from tests.clirun import cli_runner
from tests.sandbox.helpers import raw

USER = "console-test"


@pytest.fixture
def rlark(sandbox, capsys, env):
    return cli_runner(sandbox.kubeconfig, capsys)


def _make_key(directory) -> tuple:
    ssh_dir = directory / ".ssh"
    ssh_dir.mkdir()
    private = ssh_dir / "id_ed25519"
    keygen = shutil.which("ssh-keygen")
    if keygen:
        subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-C", "me@laptop", "-f", str(private)],
                       check=True, timeout=20)
        fingerprint = subprocess.run([keygen, "-l", "-f", str(private) + ".pub"], capture_output=True, text=True,
                                     check=True, timeout=20).stdout.split()[1]
    else:
        key = ed25519.Ed25519PrivateKey.generate()
        private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                              serialization.NoEncryption()))
        (ssh_dir / "id_ed25519.pub").write_bytes(key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH) + b" me@laptop\n")
        fingerprint = None
    return private, ssh_dir / "id_ed25519.pub", fingerprint


def _console_keys(sandbox) -> list[dict]:
    reply = raw(sandbox, "GET", "/api/v1/ssh-user-keys")
    assert reply.status == 200
    return reply.json() or []


def test_add_list_delete_round_trip(rlark, sandbox, env, monkeypatch):
    monkeypatch.setenv("HOME", str(env))
    before = len(sandbox.unknown_routes)
    private, public, fingerprint = _make_key(env)
    added = rlark("sshkeys", "add", "~/.ssh/id_ed25519.pub", "--user", USER)
    assert added.code == 0, added.err
    if fingerprint:
        assert fingerprint in added.out  # ours is the fingerprint ssh-keygen -l prints
    blob = public.read_text().split()[1]
    shown = [k for k in _console_keys(sandbox) if k["user"] == USER]
    assert len(shown) == 1 and shown[0]["public_key"].split()[1] == blob

    listed = rlark("sshkeys", "list", "--user", USER)
    row = next(line for line in listed.out.splitlines() if line.startswith(USER))
    assert "ssh-ed25519" in row and row.split()[1] == "0"

    again = rlark("sshkeys", "add", str(public), "--user", USER)
    assert again.code == 1 and "409" in again.err and len(again.err.strip().splitlines()) == 1

    monkeypatch.setattr("sys.stdin", None)
    unconfirmed = rlark("sshkeys", "delete", str(public))
    assert unconfirmed.code == 1 and "pass --yes" in unconfirmed.err
    assert [k for k in _console_keys(sandbox) if k["user"] == USER]

    deleted = rlark("sshkeys", "delete", str(public), "--yes")
    assert deleted.code == 0, deleted.err
    assert f"SSH key 0 of {USER} deleted" in deleted.out
    assert not [k for k in _console_keys(sandbox) if k["user"] == USER]
    assert "No SSH keys registered" in rlark("sshkeys", "list", "--user", USER).out
    assert sandbox.unknown_routes[before:] == []


def test_bad_files_refused_before_sending(rlark, sandbox, env):
    private, public, _ = _make_key(env)
    before = json.dumps(_console_keys(sandbox))
    refused = rlark("sshkeys", "add", str(private), "--user", USER)
    assert refused.code == 2 and "private key" in refused.err
    assert "PRIVATE" not in refused.err.replace("private key", "")
    broken = env / "broken.pub"
    broken.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVub3VnaA== x\nssh-rsa AAAA y\n")
    assert rlark("sshkeys", "add", str(broken), "--user", USER).code == 2
    wrong = env / "wrong.pub"
    wrong.write_text("ssh-rsa " + public.read_text().split()[1] + "\n")  # an ed25519 blob called ssh-rsa
    result = rlark("sshkeys", "add", str(wrong), "--user", USER)
    assert result.code == 2 and "does not hold a ssh-rsa key" in result.err
    assert json.dumps(_console_keys(sandbox)) == before


def test_readonly_refuses_add_and_delete(rlark, sandbox, env):
    _, public, _ = _make_key(env)
    assert rlark("sshkeys", "add", str(public), "--user", USER).code == 0
    try:
        add = rlark("--readonly", "sshkeys", "add", str(public), "--user", USER + "-2")
        delete = rlark("--readonly", "sshkeys", "delete", f"{USER}/0", "--yes")
        for result in (add, delete):
            assert result.code == 1 and "read-only mode: refusing" in result.err
        assert [k["user"] for k in _console_keys(sandbox) if k["user"].startswith(USER)] == [USER]
    finally:
        assert rlark("sshkeys", "delete", f"{USER}/0", "--yes").code == 0


def test_a_listed_user_or_date_forges_no_row(rlark, sandbox, env):
    """The gateway's listing is cluster text: a user named 'x\\nroot  0  ssh-ed25519 SHA256:forged' (a line break
    in a user the console took, or a gateway answering anything) printed a row of its own in `rlark sshkeys list`,
    whose table was its own f-strings, not cluster/output.table's one-line cells."""
    _, public, _ = _make_key(env)
    forged = USER + "-x\nroot   0      ssh-ed25519 SHA256:forged\x1b]52;c;SGk=\x07"
    assert rlark("sshkeys", "add", str(public), "--user", forged).code == 0
    try:
        listed = rlark("sshkeys", "list")
        assert listed.code == 0 and not any(line.startswith("root") for line in listed.out.splitlines()), listed.out
        row = next(line for line in listed.out.splitlines() if line.startswith(USER + "-x"))
        assert "\\nroot   0      ssh-ed25519 SHA256:forged" in row and "\x1b" not in listed.out
    finally:
        assert rlark("sshkeys", "delete", str(public), "--yes").code == 0
