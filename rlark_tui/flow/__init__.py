"""The core flow: list+watch and periodic reads (reconciler, polls, alertpoll) build immutable Snapshots (snapshot);
the app hands them to screens (services, messages); every mutation goes through actions.
"""
