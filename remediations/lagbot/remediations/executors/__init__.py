"""Executors act on the workload that runs a group's consumers: kubernetes, command, local."""
