"""Errors that reach the user as one clear line instead of a traceback.

Every layer raises these; cli.main turns them into a message and an exit code.
"""


class RlarkError(Exception):
    """A failure the user can act on; exit code 1. Its text is redacted: a message never shows a secret."""

    exit_code = 1

    def __init__(self, *args) -> None:
        from rlark_tui.text.redact import redact_text  # here, not at the top: rlark_tui.model imports this module
        super().__init__(*(redact_text(arg) if isinstance(arg, str) else arg for arg in args))


class UsageError(RlarkError):
    """The input cannot be used at all (unreadable file, bad flag value); exit code 2."""

    exit_code = 2
