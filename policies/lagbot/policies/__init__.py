"""Policies: who may approve which remediation for which groups. Lands with the remediations issue."""
