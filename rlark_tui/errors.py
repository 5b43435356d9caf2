"""Errors that reach the user as one clear line instead of a traceback.

Every layer raises these; cli.main turns them into a message and an exit code.
"""


class RlarkError(Exception):
    """A failure the user can act on; exit code 1."""

    exit_code = 1


class UsageError(RlarkError):
    """The input cannot be used at all (unreadable file, bad flag value); exit code 2."""

    exit_code = 2
