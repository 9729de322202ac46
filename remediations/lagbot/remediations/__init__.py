"""Remediations: one package per action (restart/, scale/, drain/, reset_offsets/), the contract they keep (base), the
registry that lists them (one line each), verification, and the executors that act on a group's workload.

A remediation names the causes it answers (`Remediation.addresses`); the service joins causes to remediations
(lagbot.remediations.registry `answering`). docs/remediations.md says how to add one.
"""
