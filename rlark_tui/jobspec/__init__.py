"""From a job draft to a Job manifest, pure: the draft (the wizard's state and file), its field table and hints,
validation and findings, rendering, starters, clone and the diff of two runs.
"""
