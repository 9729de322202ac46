"""The exit codes of `lagbot check` (and the demo, which says what `check` would exit).

0 nothing at warn or above, 1 warn, 2 critical or page, 3 a cluster or a group could not be read (its lag is
unknown, so this outranks severities), 4 bad configuration or usage, 70 an internal error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lagbot.core.model import Severity

if TYPE_CHECKING:
    from lagbot.engine.check import CheckReport

EXIT_OK, EXIT_WARN, EXIT_CRITICAL, EXIT_UNREACHABLE, EXIT_USAGE = 0, 1, 2, 3, 4
EXIT_INTERNAL = 70  # EX_SOFTWARE: not the user's input, a failure of lagbot or its environment


def exit_code(report: CheckReport) -> int:
    """The process exit code for a check report."""
    if report.unreadable:
        return EXIT_UNREACHABLE
    worst = report.worst_severity
    if worst >= Severity.CRITICAL:
        return EXIT_CRITICAL
    return EXIT_WARN if worst is Severity.WARN else EXIT_OK
