"""What the screens and the CLI show, derived once per Snapshot (SnapshotIndex) into rows.
"""
