"""The wording of Slack messages, one module per subject: an incident's thread (incidents), a remediation's proposal
and its clicks (proposals), `/lag` (commands), digests and charts (digests), incident storms (storms).

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats). A caller
imports the subject it speaks of.
"""
