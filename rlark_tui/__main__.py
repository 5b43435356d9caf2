"""`python -m rlark_tui` runs the `rlark` command.

Same entry point as the console script.
"""

import sys

from rlark_tui.cli import main

sys.exit(main())
