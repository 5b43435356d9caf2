"""Tests of the sandbox API server: store, logs, HTTPS API with the kubernetes client and kubectl, gateway.
Cluster-side tests use the agent-less `bare_sandbox` so the agent cannot change objects under them.
"""
