"""rlark-tui: a keyboard-driven terminal console for RLark jobs.

The package root only names the version; see cli.py for the entry point.
"""

__version__ = "0.1.0"
