"""The `scale` remediation, one package: the remediation (`remediation`) and its words (`wording`)."""
