"""The Textual stylesheets (*.tcss): all of the console's styling, no inline colours in the code.
Installed as the package rlark_tui.styles (pyproject.toml maps it); rlark_tui/local/resources.py reads them.
"""
