"""`python -m rlark_tui` runs the `rlark` command.

Same entry point as the console script.
"""

from rlark_tui.cli import run

run()
