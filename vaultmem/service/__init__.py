"""The long-lived side: the watcher that follows file events, and the local socket
it serves recall and writes on (with the light client the CLI uses)."""
