"""Reusable Textual widgets of the rlark TUI: live table, log pane, workers tree, filter and status bars.

Widgets hold no cluster I/O and carry no inline colours (styles/*.tcss styles them).
"""
