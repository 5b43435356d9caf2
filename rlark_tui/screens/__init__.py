"""Textual screens of the rlark TUI: job list, job detail, logs, nodes, dialogs and help.

Screens render the latest Snapshot and call app-level actions; they never call the API to render.
"""
