"""Sub-commands of `rlark`, one module per command group.

Each module registers its parsers with cli.build_parser and keeps I/O at the edges.
"""
