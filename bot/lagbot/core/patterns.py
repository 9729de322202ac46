"""The regular expressions of the config and the policy, run on names the cluster sends: in linear time.

Group names are chosen by whoever commits an offset, so a pattern such as `([a-z0-9]+-?)+-prod` run by Python's
backtracking `re` on thirty `a`s and a `!` takes exponential time and holds the whole process. Every pattern from
the settings or the policy is compiled with RE2 (google-re2), whose matching time is linear in the name, whatever
the pattern. What RE2 cannot run in linear time (backreferences `\\1`, lookarounds `(?=`, `(?<!`, possessive or
atomic groups) it refuses to compile, and so does lagbot, when the file is loaded, with a message naming the field.

Patterns match the whole name (`fullmatch`), and `.` matches a newline too: a group name may hold one (Kafka
allows it), and `.*` must watch it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import re2

MAX_PATTERN = 1_000
"""Characters a pattern may have."""
_MAX_MEMORY = 8 << 20
"""Bytes RE2 may use for one compiled pattern (its default); a pattern too big for it is refused."""


class UnsafePattern(ValueError):
    """A pattern lagbot does not run: it is no regular expression (`invalid`), or it needs backtracking, for which
    there is no linear-time match. `problem` says what is wrong."""

    def __init__(self, problem: str, *, invalid: bool) -> None:
        super().__init__(problem)
        self.problem = problem
        self.invalid = invalid


@functools.cache
def _options() -> re2.Options:
    import re2

    options = re2.Options()
    options.dot_nl = True
    options.max_mem = _MAX_MEMORY
    options.log_errors = False
    return options


@functools.lru_cache(maxsize=4_096)
def compiled(pattern: str) -> re2._Regexp:
    """`pattern` compiled for linear-time matching; UnsafePattern (saying why) when it cannot be."""
    import re2

    if len(pattern) > MAX_PATTERN:
        raise UnsafePattern(f"longer than {MAX_PATTERN} characters", invalid=False)
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        found = exc.args[0] if exc.args else exc
        raise _refused(pattern, found.decode() if isinstance(found, bytes) else str(found)) from None


def _refused(pattern: str, error: str) -> UnsafePattern:
    """Why RE2 refused `pattern`: Python's own error when it is no regular expression at all, else RE2's (a
    backreference, a lookaround, a possessive or atomic group: something that needs backtracking)."""
    import re

    try:
        re.compile(pattern)
    except re.error as exc:
        return UnsafePattern(str(exc), invalid=True)
    return UnsafePattern(error, invalid=False)


def check(pattern: str) -> str:
    """`pattern`, once it is known to compile for linear-time matching (UnsafePattern otherwise)."""
    compiled(pattern)
    return pattern


def fullmatch(pattern: str, text: str) -> bool:
    """Whether `pattern` matches the whole of `text`, in time linear in `text` (a lone surrogate, which has no UTF-8
    form for RE2, is matched as '?')."""
    try:
        return compiled(pattern).fullmatch(text) is not None
    except UnicodeEncodeError:
        return compiled(pattern).fullmatch(text.encode("utf-8", "replace").decode("utf-8")) is not None
