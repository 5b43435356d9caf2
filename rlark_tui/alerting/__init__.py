"""The alert engine, pure: the rules over the platform's state and the run's log, the book of alerts, and
the thresholds.
"""
