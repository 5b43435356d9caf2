"""Benchmarks for rlark-tui at scale (issue 9): `python -m bench [--quick] [--json FILE]`.

Each measuring module exposes `run(workdir: Path, quick: bool) -> dict[str, float]`; `harness` starts
sandboxes in their own processes and holds the small shared helpers.
"""
