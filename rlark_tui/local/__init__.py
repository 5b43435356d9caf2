"""The operator's own machine: the config file and state dir, private file writes, draft files, alert counts,
`$EDITOR`, the terminal, and the processes rlark starts (alert hooks, the Pod shell hand-over).
"""
