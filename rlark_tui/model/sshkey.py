"""OpenSSH public keys as the console's SSH keys page handles them (`ssh-user-keys`, suk_handler.go): a `.pub` line
checked before anything is sent, its SHA256 fingerprint (as `ssh-keygen -l` prints it) and the rows of a listing.

Pure. A file holding a private key is refused without quoting any of it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from rlark_tui.errors import UsageError
from rlark_tui.text.parse import ascii_int
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import one_line

KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
             "ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com")
"""The key types Go's `ssh.ParseAuthorizedKey` (the gateway's check) accepts."""
MAX_PUB_BYTES = 16 * 1024
_LINE = re.compile(r"^(?P<type>\S+)\s+(?P<blob>[A-Za-z0-9+/]+={0,2})(?:\s+(?P<comment>.*))?$")


@dataclass(frozen=True)
class PublicKey:
    type: str
    blob: bytes
    comment: str = ""

    @property
    def line(self) -> str:
        """`<type> <base64>` plus the comment, the form sent to the gateway."""
        text = f"{self.type} {base64.b64encode(self.blob).decode()}"
        return f"{text} {self.comment}" if self.comment else text

    @property
    def fingerprint(self) -> str:
        return "SHA256:" + base64.b64encode(hashlib.sha256(self.blob).digest()).decode().rstrip("=")


def parse_public_key(text: str) -> PublicKey:
    """One OpenSSH public key line (the `.pub` file's text); UsageError says what is wrong."""
    if "PRIVATE KEY" in text:
        raise UsageError("this is a private key: give the public key (the .pub file); nothing was sent")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if len(lines) != 1:
        raise UsageError(f"expected one public key line, found {len(lines)}")
    match = _LINE.match(lines[0])
    if not match:
        raise UsageError("not an OpenSSH public key line (<type> <base64> [comment])")
    key_type = match.group("type")
    if key_type not in KEY_TYPES:
        raise UsageError(f"unsupported key type {clean(key_type)[:40]!r} (one of {', '.join(KEY_TYPES)})")
    try:
        blob = base64.b64decode(match.group("blob"), validate=True)
    except (binascii.Error, ValueError):
        raise UsageError("the key's base64 does not decode") from None
    length = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else -1
    if blob[4:4 + length] != key_type.encode():
        raise UsageError(f"the key's data does not hold a {key_type} key")
    comment = match.group("comment") or ""
    if any(ord(ch) < 32 and ch != "\t" for ch in comment):
        raise UsageError("the key's comment holds a control character")
    return PublicKey(key_type, blob, comment.strip())


def try_parse(text: str) -> PublicKey | None:
    try:
        return parse_public_key(text)
    except UsageError:
        return None


@dataclass(frozen=True)
class KeyRow:
    """One registered key as listed (every text on one line, `sinks.one_line`: a user 'x\nroot 0 …' forged a row
    of `rlark sshkeys list` and a line of the delete's confirmation)."""

    user: str
    index: int
    type: str
    fingerprint: str
    comment: str
    added_at: str
    raw_user: str
    """The user as the gateway sent it, for the delete request."""


def key_rows(entries: list[dict[str, Any]]) -> list[KeyRow]:
    rows = []
    for entry in entries:
        index = entry.get("index")
        user = entry.get("user")
        if not isinstance(index, int) or isinstance(index, bool) or not isinstance(user, str):
            continue
        key = try_parse(str(entry.get("public_key") or ""))
        rows.append(KeyRow(one_line(user), index, key.type if key else "?", key.fingerprint if key else "?",
                           one_line(key.comment) if key else "", one_line(str(entry.get("added_at") or "")), user))
    return sorted(rows, key=lambda r: (r.user, r.index))


def find_key(rows: list[KeyRow], ref: str, key: PublicKey | None = None, user: str | None = None) -> list[KeyRow]:
    """Rows named by `ref`: `USER/INDEX`, a `SHA256:` fingerprint, or (with `key`) the key of a `.pub` file;
    `user` narrows to one user."""
    if key is not None:
        found = [r for r in rows if r.fingerprint == key.fingerprint]
    elif ref.startswith("SHA256:"):
        found = [r for r in rows if r.fingerprint == ref]
    else:
        who, slash, number = ref.rpartition("/")
        index = ascii_int(number)
        if not slash or index is None:
            raise UsageError(f"{clean(ref)!r} is neither USER/INDEX, a SHA256: fingerprint nor a .pub file")
        found = [r for r in rows if r.raw_user == who and r.index == index]
    return [r for r in found if user is None or r.raw_user == user]
