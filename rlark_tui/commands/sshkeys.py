"""`rlark sshkeys list|add|delete`: the SSH public keys the console registers (`/api/v1/ssh-user-keys`,
suk_handler.go; the wizard's SSH key and the `ssh -J` line need one).

Owns the arguments and messages; the key is checked (model/sshkey.py) before anything is sent, and adding and
deleting go through actions.Actions (refused under --readonly).
"""

from __future__ import annotations

import argparse
import getpass
from pathlib import Path

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.commands.lifecycle import confirm
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.flow.actions import Actions
from rlark_tui.local.fsutil import read_input
from rlark_tui.model import sshkey
from rlark_tui.text.sinks import cell_width, pad

EXIT_CODES = """exit codes:
  0  listed / added / deleted
  1  refused (--readonly, no confirmation), no such key, the gateway refused (a duplicate: 409), connection error
  2  usage error (not a public key file, an ambiguous key)"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "sshkeys", parents=parents, help="list, add and delete registered SSH public keys",
        description="The SSH public keys the console's SSH keys page lists (gateway `ssh-user-keys`).",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    ls = verbs.add_parser("list", parents=parents, help="every registered key")
    ls.add_argument("--user", metavar="U", help="only this user's keys")
    ls.set_defaults(handler=run_list)
    add = verbs.add_parser("add", parents=parents, help="register the key of a .pub file")
    add.add_argument("file", metavar="FILE.pub")
    add.add_argument("--user", metavar="U", help="the user it is registered for (default: your login name)")
    add.set_defaults(handler=run_add)
    delete = verbs.add_parser("delete", parents=parents, help="delete a registered key")
    delete.add_argument("key", metavar="KEY", help="USER/INDEX as listed, a SHA256: fingerprint, or a .pub file")
    delete.add_argument("--user", metavar="U", help="only this user's key")
    delete.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    delete.set_defaults(handler=run_delete)


def read_public_key(path: Path) -> sshkey.PublicKey:
    try:
        text = read_input(str(path), "public key file", sshkey.MAX_PUB_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"public key file {path}: not UTF-8 text") from None
    return sshkey.parse_public_key(text)


def _rows(access: ClusterAccess, user: str | None = None) -> list[sshkey.KeyRow]:
    return [r for r in sshkey.key_rows(access.ssh_keys()) if user is None or r.raw_user == user]


def run_list(args: argparse.Namespace) -> int:
    rows = _rows(ClusterAccess.from_args(args), args.user)
    if not rows:
        print("No SSH keys registered" + (f" for {args.user}." if args.user else "."))
        return 0
    width = max(4, *(cell_width(r.user) for r in rows))
    print(f"{'USER':<{width}}  INDEX  {'TYPE':<11} {'FINGERPRINT':<50} {'COMMENT':<16} ADDED")
    for r in rows:
        print(f"{pad(r.user, width)}  {r.index:<5}  {pad(r.type, 11)} {pad(r.fingerprint, 50)} "
              f"{pad(r.comment or '-', 16)} {r.added_at or '-'}")
    return 0


def run_add(args: argparse.Namespace) -> int:
    key = read_public_key(Path(args.file).expanduser())
    user = args.user or getpass.getuser()
    access = ClusterAccess.from_args(args)
    actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
    print(actions.add_ssh_key(user, key.line) + f": {key.type} {key.fingerprint}")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    access = ClusterAccess.from_args(args)
    actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
    actions.guard(f"delete SSH key {args.key}")
    path = Path(args.key).expanduser()
    key = read_public_key(path) if args.key.endswith(".pub") or path.is_file() else None
    found = sshkey.find_key(_rows(access), args.key, key, args.user)
    if not found:
        raise RlarkError(f"no registered SSH key matches {args.key}" + (f" for {args.user}" if args.user else ""))
    if len(found) > 1:
        raise UsageError(f"{args.key} matches {len(found)} keys (users {', '.join(r.user for r in found)}): "
                         "pass --user")
    row = found[0]
    if not args.yes:
        confirm(f"This removes {row.user}'s key {row.index} ({row.type} {row.fingerprint}) from the console; Jobs "
                "that already carry it keep it until they are re-created.",
                f"delete SSH key {row.index} of {row.user}", "the key was not deleted")
    print(actions.delete_ssh_key(row.raw_user, row.index))
    return 0
