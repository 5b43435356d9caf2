"""`rlark metrics JOB`: a Job's scalar series from its Header Task's TensorBoard (through the gateway) or
its Header log, as a table of the last values, CSV or JSON. Reading is cluster/metrics.py.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys

from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.metrics import SOURCES, MetricsUnavailable, fetch_metrics
from rlark_tui.cluster.output import table
from rlark_tui.telemetry import steptime
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import csv_cell


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "metrics", parents=parents, help="scalar series of a Job (TensorBoard via the gateway, else the log)",
        description="A Job's training curves: TensorBoard's scalars through the gateway when the Header Task has "
                    "a tensorBoardDir and the proxy answers, else the metric tables and tqdm postfixes of the "
                    "Header Pod's log. JSON: {job, source, series: {tag: [[wall_time, step, value], ...]}}.")
    parser.add_argument("job", metavar="JOB", help="Job name")
    parser.add_argument("--tag", action="append", default=[], metavar="TAG", help="only this tag (repeatable)")
    parser.add_argument("-o", "--format", choices=("table", "csv", "json"), default="table", help="output format")
    parser.add_argument("--time", action="store_true",
                        help="where the step time goes: each phase's seconds and share of the step, the bottleneck "
                             "and its trend over the last 20 steps (RLinf's time/* metrics); JSON: {job, steps: "
                             "[{step, total, phases}], bottleneck: {phase, share, trend}}")
    parser.add_argument("--source", choices=SOURCES, default="auto", help="where the numbers come from")
    parser.set_defaults(handler=run)


def _value(value: float) -> str:
    return f"{value:.6g}" if math.isfinite(value) else str(value)


def run(args: argparse.Namespace) -> int:
    access = ClusterAccess.from_args(args)
    try:
        result = fetch_metrics(access, args.job, args.source, None if args.time else args.tag or None)
    finally:
        access.close()
    if args.time:
        return _print_time(args, result)
    missing = [tag for tag in args.tag if tag not in result.series]
    if missing:
        raise MetricsUnavailable(f"metrics: no tag {', '.join(missing)} in the {result.source} of {args.job}"
                                 f" (tags: {', '.join(sorted(result.series)) or 'none'})")
    if not any(result.series.values()):
        raise MetricsUnavailable(f"metrics: the {result.source} of {args.job} has no scalars yet"
                                 + (f" ({result.note})" if result.note else ""))
    if result.note:
        print(f"note: {result.note}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(result.to_json()))
    elif args.format == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["tag", "wall_time", "step", "value"])
        for tag, points in result.series.items():
            writer.writerows([csv_cell(tag), f"{w:.3f}", s, _value(v)] for w, s, v in points)
        sys.stdout.write(out.getvalue())
    else:
        rows = []
        for tag, points in result.series.items():
            real = [p[2] for p in points if math.isfinite(p[2])]
            last = points[-1] if points else None
            rows.append([tag, str(len(points)), str(last[1]) if last else "-", _value(last[2]) if last else "-",
                         _value(min(real)) if real else "-", _value(max(real)) if real else "-"])
        print(f"source: {result.source}")
        print(table(["TAG", "POINTS", "STEP", "LAST", "MIN", "MAX"], rows))
    return 0


TIME_ROWS = 20


def _print_time(args: argparse.Namespace, result) -> int:
    broken = steptime.breakdown(result.series)
    if not broken.steps:
        raise MetricsUnavailable(f"metrics: the {result.source} of {args.job} has no step times yet (RLinf's time/* "
                                 "table rows or the tqdm postfix step_time)")
    if result.note:
        print(f"note: {result.note}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(broken.to_json(args.job)))
        return 0
    phases = sorted({phase for step in broken.steps for phase in step.phases},
                    key=lambda p: (p != (broken.bottleneck.phase if broken.bottleneck else None), p))
    if args.format == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["step", "total", *map(csv_cell, phases)])
        writer.writerows([s.step, _value(s.total), *(_value(s.phases[p]) if p in s.phases else "" for p in phases)]
                         for s in broken.steps)
        sys.stdout.write(out.getvalue())
        return 0
    print(f"source: {result.source}")
    print(table(["STEP", "TOTAL", *(clean(p).upper() for p in phases)], steptime.table_cells(broken, phases, TIME_ROWS)))
    bottleneck = broken.bottleneck
    if bottleneck is not None:
        window = min(len(broken.steps), steptime.TREND_STEPS)
        print(f"bottleneck: {clean(bottleneck.phase)} {bottleneck.share:.0%} of the step, {bottleneck.trend} over "
              f"the last {window} steps ({bottleneck.change * 100:+.0f} points)")
    return 0
