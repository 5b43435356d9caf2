"""The CLI imports only the module of the command named (startup time): its table must match what the
modules register, and every command still parses alone."""

from __future__ import annotations

from rlark_tui.cli import COMMANDS, build_parser


def _choices(parser) -> set[str]:
    sub = next(action for action in parser._actions if action.dest == "command")
    return set(sub.choices)


def test_command_table_matches_what_modules_register():
    assert _choices(build_parser()) == {word for words in COMMANDS.values() for word in words}
    for words in COMMANDS.values():
        for word in words:
            assert _choices(build_parser(word)) == set(words)
