"""Tests of the sandbox API server: store, logs, HTTPS API with the kubernetes client and kubectl, gateway."""
