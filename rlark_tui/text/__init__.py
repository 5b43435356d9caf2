"""Text from outside rlark, made safe, pure: terminal sanitising (sanitize), secret masking (redact) and patterns run
under a budget (patterns).
"""
