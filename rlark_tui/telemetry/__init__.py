"""What a run reports of itself, pure: training progress and metric series read from its log, curves, and
resource use (one Pod's sample, the usage topic's state and cells).
"""
