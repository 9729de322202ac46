"""The standard library's argparse, made to answer as the `lagbot` command line does.

A refused command line raises `UsageError` (argparse itself prints and exits 2): `lagbot.cli.main` reports it as
one `lagbot: <message>` line and the usage line, exit 4. Options are never abbreviated (`--samp` is no `--samples`),
`--help` (or `-h`) shows the help, and numbers are checked against their range (`Number`). Help keeps the layout it
had: `Usage:`, the options as `-c, --config <path>`, each with its default, range or `required`, the paragraphs of a
description kept.

Only the standard library is imported here: parsing a command line (and every `--help`) costs no third-party import.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from lagbot.cli import wording


class UsageError(Exception):
    """A command line argparse refused: the message names the option or argument and what is wrong."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage
        """The usage line of the (sub-)command that refused it, ending with a newline."""


class Parser(argparse.ArgumentParser):
    """argparse's parser, raising `UsageError` instead of exiting, with `--help` (`-h` too) and no abbreviations.

    `declare` (if given) declares its options or sub-commands when the parser is first used (it parses, or shows
    its usage or help): `lagbot check ...` builds only the parsers of `lagbot` and of `check`, and imports no other
    command's module. Sub-commands' parsers are of this class too (argparse makes them of their parent's class).
    """

    def __init__(self, declare: Callable[[Parser], None] | None = None, **options: Any) -> None:
        super().__init__(formatter_class=HelpLayout, add_help=False, allow_abbrev=False, **options)
        self.add_argument("--help", "-h", action="help", help=wording.cli_help_option())
        self._declare = declare

    def _declared(self) -> None:
        if self._declare is not None:
            declare, self._declare = self._declare, None
            declare(self)

    def parse_known_args(  # type: ignore[override]  # one signature for argparse's overloads
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse, refusing what is left over here: a sub-command's unknown option is then named with the usage
        of that sub-command, not with the usage of `lagbot` (to which argparse would hand it back)."""
        self._declared()
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(wording.cli_unknown_arguments(extras))
        return parsed, []

    def format_usage(self) -> str:
        self._declared()
        return super().format_usage()

    def format_help(self) -> str:
        self._declared()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


Commands = argparse._SubParsersAction  # what `add_subparsers` returns: a parser's sub-commands


def sub_commands(parser: Parser) -> Commands[Parser]:
    """The sub-commands of `parser`, listed under `Commands:` in its help."""
    return parser.add_subparsers(title="Commands", metavar="COMMAND")


def command(
    commands: Commands[Parser], name: str, run: Callable[..., int], options: Callable[[Parser], None] | None = None
) -> Parser:
    """A sub-command that calls `run` with its options as keyword arguments (see `lagbot.cli.main.main`).

    Its help is `run`'s docstring; the list of commands shows its first paragraph. `options` declares its options
    when it is used (see `Parser`); without it, they are added to the parser returned.
    """
    first, _, rest = (run.__doc__ or "").partition("\n")
    described = f"{first}\n{textwrap.dedent(rest)}".strip()
    parser = commands.add_parser(name, help=described.split("\n\n")[0], description=described, declare=options)
    parser.set_defaults(_run=run)
    return parser


def command_group(
    commands: Commands[Parser], name: str, description: str, declare: Callable[[Commands[Parser]], None]
) -> None:
    """A sub-command with sub-commands of its own, which `declare` declares when it is used (see `Parser`).

    Alone it prints its help (exit 0).
    """
    parser = commands.add_parser(
        name, help=description, description=description, declare=lambda p: declare(sub_commands(p))
    )
    parser.set_defaults(_run=help_of(parser))


def help_of(parser: Parser) -> Callable[[], int]:
    """What `lagbot` (or a command group) without a command does: print its help, exit 0."""

    def show() -> int:
        parser.print_help()
        return 0

    return show


class Number:
    """An option's type: an int or a float, within `within` (both ends included) when given."""

    def __init__(self, kind: type[int] | type[float], within: tuple[float, float] | None = None) -> None:
        self.kind, self.within = kind, within

    def __call__(self, text: str) -> float:
        try:
            value = self.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(wording.cli_not_a_number(text, whole=self.kind is int)) from None
        if self.within is not None:
            low, high = self.within
            if not low <= value <= high:  # NaN too: it is in no range
                raise argparse.ArgumentTypeError(wording.cli_out_of_range(text, low, high))
        return value

    def metavar(self) -> str:
        """The value in the usage and the help: `<int>`, `<float range>`."""
        return f"<{self.kind.__name__}{'' if self.within is None else ' range'}>"


HEADINGS = {"positional arguments": "Arguments", "options": "Options"}
"""argparse's section headings, as `lagbot`'s help names them (with `Usage:` and `Commands:`)."""


class HelpLayout(argparse.HelpFormatter):
    """argparse's help, laid out as `lagbot` has always shown it (see the module's docstring)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30)  # the help beside `-n, --samples <int range>`, as before

    def add_usage(
        self, usage: str | None, actions: Iterable[argparse.Action], groups: Iterable[Any], prefix: str | None = None
    ) -> None:
        super().add_usage(usage, actions, groups, "Usage: " if prefix is None else prefix)

    def start_section(self, heading: str | None) -> None:
        super().start_section(HEADINGS.get(heading or "", heading))

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        """Fill each paragraph of a description on its own (argparse would make one of them all)."""
        return "\n\n".join(
            textwrap.fill(" ".join(paragraph.split()), width, initial_indent=indent, subsequent_indent=indent)
            for paragraph in text.split("\n\n")
        )

    def _get_help_string(self, action: argparse.Action) -> str | None:
        """The help, then what the option takes when not given, its range, or that it is required."""
        notes = []
        if action.nargs != 0 and action.default is not None and action.default is not argparse.SUPPRESS:
            notes.append(f"default: {action.default}")
        if isinstance(action.type, Number) and action.type.within is not None:
            low, high = action.type.within
            notes.append(f"{low}<=x<={high}")
        if action.required:
            notes.append("required")
        if not notes:
            return action.help
        shown = "; ".join(notes).replace("%", "%%")  # argparse %-formats help strings
        return f"{action.help}  [{shown}]"

    def _get_default_metavar_for_optional(self, action: argparse.Action) -> str:
        """An option's value as its type: `<path>`, `<str>`, `<int>`, `<float range>`."""
        if isinstance(action.type, Number):
            return action.type.metavar()
        return "<path>" if action.type is Path else "<str>"

    def _format_action_invocation(self, action: argparse.Action) -> str:
        """`-c, --config <path>` (argparse repeats the value after each flag)."""
        if not action.option_strings or action.nargs == 0:
            return super()._format_action_invocation(action)
        value = self._format_args(action, self._get_default_metavar_for_optional(action))
        return f"{', '.join(action.option_strings)} {value}"

    def _format_action(self, action: argparse.Action) -> str:
        """Sub-commands listed one a line under `Commands:`, without argparse's line of their metavar above them."""
        if isinstance(action, argparse._SubParsersAction):
            return "".join(self._format_action(sub) for sub in action._get_subactions())
        return super()._format_action(action)
