"""Remediations: one module per action (restart, scale, drain, reset offsets) and their executors.

Empty until the remediations issue lands; the lag engine names remediations by these keys:
`restart`, `scale`, `drain`, `reset_offsets` (see lagbot.engine.diagnose).
"""
