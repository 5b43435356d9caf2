"""`rlark describe node NAME` and `rlark get clusters`: the console's node detail and cluster overview from the
control plane's Node CRs, Tasks, Pod CRs and Jobs, derived by the TUI's own derivers (view/nodes.py) from a
SnapshotIndex of what was listed; model/nodeinfo.py lays them out."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable

import yaml

from rlark_tui.cluster.kinds import JOBS, NODES, PODS, TASKS
from rlark_tui.errors import RlarkError
from rlark_tui.flow.snapshot import Snapshot, source_key
from rlark_tui.model import nodeinfo
from rlark_tui.model.objects import Job, Node
from rlark_tui.text.sanitize import clean
from rlark_tui.view import nodes
from rlark_tui.view.index import SnapshotIndex


def listed_index(*, jobs: Iterable[object] = (), tasks: Iterable[object] = (), pods: Iterable[object] = (),
                 nodes: Iterable[object] = ()) -> SnapshotIndex:
    """A SnapshotIndex of listed objects (per Snapshot field: the list's items)."""
    return SnapshotIndex(Snapshot(jobs={Job(raw).name: raw for raw in jobs if isinstance(raw, dict)},
                                  tasks=_keyed(tasks), pods=_keyed(pods), nodes=_keyed(nodes)))


def _keyed(items: Iterable[object]) -> dict[str, dict]:
    return {source_key(raw): raw for raw in items if isinstance(raw, dict)}


def describe_node(args: argparse.Namespace) -> int:
    from rlark_tui.cluster.access import ClusterAccess

    access = ClusterAccess.from_args(args)
    found = [raw for raw in access.list(NODES, None).items if Node(raw).name == args.name]
    if not found:
        raise RlarkError(f'nodes "{clean(args.name)}" not found in any cluster')
    index = listed_index(nodes=found, tasks=access.list(TASKS, None).items, pods=access.list(PODS, None).items)
    details = [nodes.node_detail(index, key) for key in index.snapshot.nodes]
    print("\n\n".join(nodeinfo.describe_node_text(detail) for detail in details if detail is not None))
    return 0


def get_clusters(args: argparse.Namespace, access) -> int:
    """`access`: ClusterAccess or the lean client (`commands/get.py` `reader`)."""
    rows = nodes.cluster_rows(listed_index(nodes=access.list(NODES, None).items, jobs=access.list(JOBS).items,
                                           tasks=access.list(TASKS, None).items))
    if args.names:
        rows = [r for r in rows if r.cluster in args.names or r.cluster.removeprefix("rlark-") in args.names]
    if not rows:
        raise RlarkError("no member clusters found (no Node CRs)")
    if args.output in ("json", "yaml"):
        data = [{"cluster": r.cluster, "nodesOnline": r.nodes_online, "nodesTotal": r.nodes_total,
                 "gpus": [{"model": m, "free": f, "total": t} for m, f, t in r.gpus],
                 "runningJobs": r.running_jobs, "region": r.region} for r in rows]
        print(json.dumps(data, indent=2) if args.output == "json" else yaml.safe_dump(data, sort_keys=False).rstrip())
    elif args.output == "name":
        print("\n".join(f"cluster/{r.cluster}" for r in rows))
    else:
        print(nodeinfo.clusters_table(rows))
    return 0
