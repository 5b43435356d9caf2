"""Ray dashboard access for a Job's Ray cluster (alive nodes, `ray status` text, Ray jobs).

The client lives in `rlark_tui.raydash.client`; it speaks HTTP only and never needs the `ray` package.
"""
