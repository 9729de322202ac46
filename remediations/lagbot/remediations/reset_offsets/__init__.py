"""The `reset_offsets` remediation, one package: the remediation (`remediation`) and its words (`wording`)."""
