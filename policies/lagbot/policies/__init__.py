"""Policies: who may approve which remediation for which groups, and what each rule allows (model, loader, explain)."""
