"""The causes the offset reset answers (read without loading the remediation: lagbot.remediations.packages)."""

from __future__ import annotations

from lagbot.core.model import CauseKind

ADDRESSES = frozenset({CauseKind.DATA_LOSS})
