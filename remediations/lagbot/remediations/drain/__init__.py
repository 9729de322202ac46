"""The emergency drain, one package: the remediation (`remediation`), its pure plan (`plan`), what approvers approve
(`params`), the Spark job (`job`, run in-process or by spark-submit; `connect` through Spark Connect), the sinks it
writes to (`sinks`), the group's offsets before and after (`offsets`), the pre-flight checks (`preflight`), its own
execution context (`context`), what a policy rule may set (`policy`), its configuration section (`settings`, read
by lagbot.core.config, so it imports nothing above the foundation), the causes it answers (`answers`, read by
`lagbot check` too, so it imports only lagbot.core.model) and its words (`wording`).

This module imports nothing, so that reading the configuration (`settings`) loads neither Spark nor the remediation.
"""
