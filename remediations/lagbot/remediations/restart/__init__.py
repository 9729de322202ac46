"""The `restart` remediation, one package: the remediation (`remediation`) and its words (`wording`)."""
