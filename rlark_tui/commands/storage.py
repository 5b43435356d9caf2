"""`rlark storage ls|cp|rm`: the objects of a storage class through the gateway's storage file API, as the console's
Storage page reaches them (rlark-platform.md §5; storage_handler.go): after a Job's Pods are gone, its outputs and
checkpoints are reachable only there.

Owns the arguments, the listing's paging (the API's `marker`) and the messages; reading and the download are in
cluster/, uploads and deletes go through actions.Actions (refused under --readonly).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rlark_tui.cluster import objects
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.server import agent_id
from rlark_tui.commands.lifecycle import confirm
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.flow.actions import Actions
from rlark_tui.local import fsutil
from rlark_tui.model import storage as st
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import one_line, pad

EXIT_CODES = """exit codes:
  0  listed / copied / deleted
  1  refused (--readonly, no confirmation), not found, a checksum that does not match the listing, an API or
     connection error (a cut download keeps its part: the same command again resumes it)
  2  usage error"""
MAX_LISTED = 100_000
"""`ls` stops after this many entries (with a note), whatever the pages say."""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "storage", parents=parents, help="list, download, upload and delete storage class objects",
        description="Objects of a storage class in one member cluster, through the gateway's storage file API "
                    "(the console's Storage page).",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cluster", metavar="C",
                        help="member cluster (gpu-a or rlark-gpu-a); default: the class's only cluster")

    ls = verbs.add_parser("ls", parents=[*parents, common], help="list a folder (CLASS[/PREFIX])")
    ls.add_argument("location", metavar="CLASS[/PREFIX]")
    ls.add_argument("-r", "--recursive", action="store_true", help="every object below the folder, flat")
    ls.add_argument("--page-size", type=int, default=100, metavar="N", help="keys per request (default 100)")
    ls.set_defaults(handler=run_ls)

    cp = verbs.add_parser("cp", parents=[*parents, common],
                          help="download CLASS:KEY to LOCAL, or upload LOCAL to CLASS:KEY")
    cp.add_argument("source", metavar="SRC")
    cp.add_argument("dest", metavar="DST")
    cp.add_argument("--max-size", type=int, default=objects.MAX_DOWNLOAD, metavar="BYTES",
                    help=f"refuse a download bigger than this (default {objects.MAX_DOWNLOAD})")
    cp.set_defaults(handler=run_cp)

    rm = verbs.add_parser("rm", parents=[*parents, common], help="delete CLASS:KEY")
    rm.add_argument("target", metavar="CLASS:KEY")
    rm.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    rm.set_defaults(handler=run_rm)


def _cluster(access: ClusterAccess, storage_class: str, given: str | None) -> str:
    """The agent ID the file routes take: --cluster, else the class's only cluster as the gateway lists it."""
    if given:
        return agent_id(given.strip())
    clusters = access.storage_class_clusters()
    if storage_class not in clusters:
        known = ", ".join(sorted(clusters)) or "none"
        raise RlarkError(f"storage class {storage_class!r} is not listed by the gateway (classes: {clean(known)})")
    found = clusters[storage_class]
    if len(found) != 1:
        raise UsageError(f"storage class {storage_class} is in {len(found)} clusters "
                         f"({clean(', '.join(found)) or 'none'}): pass --cluster")
    return found[0]


def run_ls(args: argparse.Namespace) -> int:
    if not 0 < args.page_size <= 1000:
        raise UsageError("--page-size must be between 1 and 1000")
    where = st.parse_location(args.location)
    access = ClusterAccess.from_args(args)
    cluster = _cluster(access, where.storage_class, args.cluster)
    listed, header = 0, True

    def fetch(marker: str) -> st.Page:
        return st.parse_page(access.storage_list(where.storage_class, cluster, where.key,
                                                 delimiter="" if args.recursive else "/", marker=marker,
                                                 max_keys=args.page_size), where.key)

    for page in st.pages(fetch, f"storage ls {where.storage_class}/{clean(where.key)}"):
        for entry in page.entries:
            if header:
                print(f"{'NAME':<48} {'SIZE':>10}  {'MODIFIED':<24} ETAG")
                header = False
            print(f"{pad(one_line(entry.name), 48)} {'-' if entry.folder else st.human_size(entry.size):>10}  "
                  f"{pad(one_line(entry.modified or '-'), 24)} {one_line(entry.etag or '-')}", flush=True)
            listed += 1
        if listed >= MAX_LISTED:
            print(f"-- stopped after {listed} entries; list a deeper prefix", file=sys.stderr)
            break
    if not listed:
        print(f"No objects in {where.storage_class}/{clean(where.key)} on {cluster}.", file=sys.stderr)
    return 0


def run_cp(args: argparse.Namespace) -> int:
    source_remote, dest_remote = st.is_remote(args.source), st.is_remote(args.dest)
    if source_remote == dest_remote:
        raise UsageError("cp needs one CLASS:KEY and one local path (SRC DST)")
    if args.max_size <= 0:
        raise UsageError("--max-size must be more than 0")
    access = ClusterAccess.from_args(args)
    actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
    if dest_remote:
        remote = st.parse_remote(args.dest, key_required=False)
        local = Path(args.source)
        key = remote.key if remote.key and not remote.key.endswith("/") else remote.key + local.name
        st.check_key(key)
        actions.guard(f"upload {remote.storage_class}:{key}")
        data = objects.read_upload(local)
        cluster = _cluster(access, remote.storage_class, args.cluster)
        print(actions.upload_object(remote.storage_class, cluster, key, data))
        return 0
    remote = st.parse_remote(args.source)
    fsutil.refuse_terminal(args.dest)  # `-` on a terminal: said before anything is read, as tar says it
    cluster = _cluster(access, remote.storage_class, args.cluster)
    entry = objects.find_object(access, remote.storage_class, cluster, remote.key)
    if entry is None:
        raise RlarkError(f"no object {remote.storage_class}:{clean(remote.key)} on {cluster}")
    target = st.download_target(args.dest, remote.key)  # a DEST typed with its `/` is made by the write (0700)
    if not args.dest.endswith("/") and not target.parent.is_dir():
        raise UsageError(f"{target.parent} is not a directory")
    done = objects.download(access, remote.storage_class, cluster, entry, target, max_bytes=args.max_size)
    resumed = f", resumed at byte {done.resumed_from}" if done.resumed_from else ""
    said = fsutil.said_beside(target)  # the object alone on stdout (DST - or /dev/stdout), its lines on stderr
    print(f"{done.path}  {done.size} bytes{resumed}", file=said)
    print(f"sha256 {done.sha256}", file=said)
    match = done.matches(entry)
    verdict = ("matches the listing's ETag" if match else "DOES NOT match the listing's ETag " + entry.etag
               if match is False else "(the ETag is no MD5: a multipart upload)")
    print(f"md5    {done.md5}  {verdict}", file=said)
    return 1 if match is False else 0


def run_rm(args: argparse.Namespace) -> int:
    remote = st.parse_remote(args.target)
    access = ClusterAccess.from_args(args)
    actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
    actions.guard(f"delete {remote.storage_class}:{remote.key}")
    cluster = _cluster(access, remote.storage_class, args.cluster)
    if objects.find_object(access, remote.storage_class, cluster, remote.key) is None:
        raise RlarkError(f"no object {remote.storage_class}:{clean(remote.key)} on {cluster}")
    if not args.yes:
        confirm(f"This deletes {remote.storage_class}:{clean(remote.key)} on {cluster} from object storage; it "
                "cannot be undone.", f"delete {remote.storage_class}:{clean(remote.key)}",
                f"{remote.storage_class}:{clean(remote.key)} was not deleted")
    print(actions.delete_object(remote.storage_class, cluster, remote.key))
    return 0
