"""The running service: incidents, approvals, the remediation coordinator, audit, history, silences, digests,
leadership."""
