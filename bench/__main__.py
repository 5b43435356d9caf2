"""`python -m bench [--quick [--lanes N]] [--json FILE] [--only MODULE,...]`: run every benchmark, print the table
of key, value, target and whether it is met, and write all keys (null for a module that failed) as JSON."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MODULES = ("startup", "cli_get", "checkeval", "steptime", "wizard", "diagnose", "stacks", "bundle", "tui", "logs", "alerts", "usage", "terminal")
# key → (module, target, "max" when the value must be at most the target, "min" when at least, None: no target)
TARGETS: dict[str, tuple[str, float | None, str | None]] = {
    "startup_first_list_s": ("startup", 0.6, "max"),
    "startup_first_list_cpu_s": ("startup", None, None),
    "startup_first_list_delay100_s": ("startup", None, None),
    "list_rss_mb": ("startup", 400, "max"),
    "kubectl_get_jobs_s": ("cli_get", None, None),
    "rlark_get_jobs_s": ("cli_get", None, None),
    "get_jobs_ratio": ("cli_get", 1.0, "min"),
    "kubectl_get_jobs_cpu_s": ("cli_get", None, None),
    "rlark_get_jobs_cpu_s": ("cli_get", None, None),
    "check_eval_ms": ("checkeval", 100, "max"),
    "check_eval_cpu_ms": ("checkeval", None, None),
    "step_time_ms": ("steptime", 100, "max"),
    "step_time_cpu_ms": ("steptime", None, None),
    "wizard_change_ms_p95": ("wizard", None, None),
    "wizard_open_cpu_ms": ("wizard", None, None),
    "diagnose_ms": ("diagnose", 3000, "max"),
    "diagnose_cpu_ms": ("diagnose", None, None),
    "stacks_s": ("stacks", 10, "max"),
    "stacks_group_ms": ("stacks", None, None),
    "stacks_group_cpu_ms": ("stacks", None, None),
    "bundle_s": ("bundle", None, None),
    "bundle_rss_mb": ("bundle", 300, "max"),
    "watch_update_latency_ms_p50": ("tui", None, None),
    "watch_update_latency_ms_p95": ("tui", 500, "max"),
    "filter_keystroke_ms_p95": ("tui", 50, "max"),
    "key_latency_ms_p95": ("tui", 100, "max"),
    "progress_requests_per_s": ("tui", None, None),
    "progress_reads_per_job_per_10s": ("tui", 1, "max"),
    "log_follow_lines_per_s": ("logs", 20000, "min"),
    "log_lag_s": ("logs", 1.0, "max"),
    "log_rss_mb": ("logs", 150, "max"),
    "alert_latency_s_p50": ("alerts", None, None),
    "alert_latency_s_p95": ("alerts", 30, "max"),
    "alert_faults": ("alerts", None, None),
    "status_tmux_s_p95": ("alerts", 0.5, "max"),
    "server_requests_per_s": ("usage", 5, "max"),
    "alert_latency_offscreen_s_max": ("usage", 30, "max"),
    "offscreen_read_gap_s_max": ("usage", None, None),
    "terminal_idle_bytes_per_min": ("terminal", 2048, "max"),
    "terminal_key_bytes": ("terminal", None, None),
    "terminal_log_frames_per_s": ("terminal", 20, "max"),
    "terminal_log_bytes_per_s": ("terminal", None, None),
}


def machine() -> dict:
    model = ""
    try:
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    except OSError:
        pass
    try:
        from importlib.metadata import version
        textual = version("textual")
    except Exception:
        textual = "unknown"
    return {"cores": os.cpu_count(), "cpu": model or platform.processor(), "python": platform.python_version(),
            "textual": textual, "platform": platform.platform()}


def scratch_dir() -> str | None:
    """Where the sandboxes' state goes: /dev/shm when it is a writable tmpfs (a 50,000-Pod seed is 60,000
    small files; deleting them from a disk mounted with `discard` takes minutes), else the temp dir."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def run_module(name: str, workdir: Path, quick: bool) -> tuple[dict, str]:
    """(its keys, "") or ({}, a one-line reason)."""
    try:
        module = importlib.import_module(f"bench.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"bench.{name}":
            return {}, f"bench.{name} does not exist yet"
        raise
    return module.run(workdir, quick), ""


def run_alone(name: str, workdir: Path) -> tuple[dict, str]:
    """`python -m bench --quick --only NAME` in a process of its own (its stderr, with its done or failed line,
    passes through): its keys and its reason, as run_module gives them."""
    out = workdir / "result.json"
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", name, "--json", str(out)],
                          cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.DEVNULL, check=False)
    if not out.exists():
        reason = f"its process exited {done.returncode} without results"
        print(f"bench {name}: failed: {reason}", file=sys.stderr, flush=True)
        return {}, reason
    document = json.loads(out.read_text())
    return {key: document[key] for key in TARGETS if document.get(key) is not None}, document["errors"].get(name, "")


def verdict(value, target, sense) -> str:
    if value is None:
        return "n/a"
    if target is None:
        return ""
    met = value <= target if sense == "max" else value >= target
    return "yes" if met else "NO"


def table(results: dict) -> str:
    lines = [f"{'key':<30} {'value':>12} {'target':>10}  met"]
    for key, (_module, target, sense) in TARGETS.items():
        value = results.get(key)
        shown = "null" if value is None else f"{value:g}"
        goal = "" if target is None else f"{'≤' if sense == 'max' else '≥'} {target:g}"
        lines.append(f"{key:<30} {shown:>12} {goal:>10}  {verdict(value, target, sense)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, the CI smoke test (< 90 s)")
    parser.add_argument("--json", metavar="FILE", type=Path, help="write every key (null when a module failed)")
    parser.add_argument("--only", metavar="MODULE,...", help=f"run only these of {', '.join(MODULES)}")
    parser.add_argument("--lanes", metavar="N", type=int, default=1,
                        help="with --quick: run N modules at once, each in a process of its own (they share the "
                             "cores, so their numbers mean less; the smoke run judges none)")
    args = parser.parse_args(argv)
    if args.lanes < 1 or (args.lanes > 1 and not args.quick):
        parser.error("--lanes takes a number from 1, and more than 1 only with --quick")
    selected = MODULES
    if args.only:
        selected = tuple(name.strip() for name in args.only.split(",") if name.strip())
        unknown = [name for name in selected if name not in MODULES]
        if unknown:
            parser.error(f"unknown module {unknown[0]!r}: choose from {', '.join(MODULES)}")
    results: dict = {key: None for key in TARGETS}
    errors: dict[str, str] = {}
    missing: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rlark-bench-", dir=scratch_dir()) as root:
        if args.lanes > 1:

            def one(name: str) -> tuple[dict, str]:
                workdir = Path(root) / name
                workdir.mkdir()
                try:
                    return run_alone(name, workdir)
                finally:
                    shutil.rmtree(workdir, ignore_errors=True)

            # the lanes take the modules last in MODULES (the longest) first; the short ones fill the gaps at the end
            order = list(reversed(selected))
            with ThreadPoolExecutor(args.lanes) as pool:
                outcomes = list(zip(order, pool.map(one, order)))
        else:
            outcomes = []
            for name in selected:
                workdir = Path(root) / name
                workdir.mkdir()
                began = time.perf_counter()
                try:
                    values, reason = run_module(name, workdir, args.quick)
                except Exception as exc:
                    values, reason = {}, f"{type(exc).__name__}: {exc}".splitlines()[0]
                    if os.environ.get("BENCH_TRACEBACK"):
                        traceback.print_exc()
                if reason:
                    print(f"bench {name}: failed: {reason}", file=sys.stderr, flush=True)
                else:
                    print(f"bench {name}: done in {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
                shutil.rmtree(workdir, ignore_errors=True)
                outcomes.append((name, (values, reason)))
        for name, (values, reason) in outcomes:
            if reason.endswith("does not exist yet"):
                missing.append(name)
            if reason:
                errors[name] = reason
            results.update(values)
    elapsed = time.perf_counter() - started
    print(table(results))
    print(f"({'quick' if args.quick else 'full'} run, {elapsed:.0f} s)")
    if args.json:
        document = dict(results, machine=machine(), quick=args.quick, seconds=round(elapsed, 1), errors=errors)
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 1 if set(errors) - set(missing) else 0


if __name__ == "__main__":
    sys.exit(main())
