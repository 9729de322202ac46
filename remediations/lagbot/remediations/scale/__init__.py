"""The `scale` remediation, one package: the remediation (`remediation`), the causes it answers (`answers`) and its
words (`wording`)."""
