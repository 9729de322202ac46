"""Remediations: one package per action (restart/, scale/, drain/, reset_offsets/), the contract they keep (base), the
registry that lists them (one line each), verification, and the executors that act on a group's workload.

A remediation package names the causes it answers (its `answers` module, read through lagbot.remediations.packages);
the service joins causes to remediations (lagbot.service.remedies). docs/remediations.md says how to add one.
"""
