"""The command line's parser, built from the commands ``sequencer.command_line`` declares: its
description and exit codes, ``--version``, each command's help with its examples, and the
errors it raises (``UserError``: ``cli.main`` says them and owns the exit code; nothing here
prints).  ``build_parser(bodies, only)`` declares one command's arguments alone when asked, so
that ``yuezheng --help`` and another command's run do not import every command's owners.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Mapping, Sequence

from cues.errors import UserError
from sequencer.command_line import COMMANDS

PROG = "yuezheng"
HELP_WIDTH = 90

Body = Callable[[argparse.Namespace], int]
"""A command's body (``cli.cmd_<name>``): calls the library, prints, returns the exit code"""


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so that main() owns the exit code."""

    def error(self, message: str) -> None:  # type: ignore[override]  # raises, never returns
        where = self.prog.removeprefix(PROG).strip()  # main() says "yuezheng: " once
        raise UserError(f"{where + ': ' if where else ''}{message}\n"
                        f"{self.format_usage().rstrip()}")


def version() -> str:
    """yuezheng's version: the installed package's, else the pyproject.toml of this tree."""
    from importlib import metadata

    try:
        return metadata.version(PROG)
    except metadata.PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        with pyproject.open("rb") as handle:
            return str(tomllib.load(handle)["project"]["version"])


def build_parser(bodies: Mapping[str, Body], only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, each bound to its body in ``bodies`` (``args.func``), or
    with ``only`` the arguments of that command alone declared (the others listed): a
    command's declarations import the modules that own its choices and defaults (numpy,
    scipy…), which ``yuezheng --help`` and another command's run need not wait for."""
    parser = Parser(
        prog=PROG,
        description="樂正 — cue, render, score and check the music of the Zhou rites "
        "(鄉飲酒禮, 鄉射禮, 燕禮, 大射).",
        epilog="Exit codes: 0 success, 2 bad input or usage, 1 anything else "
        "(`check` also uses 4: a tempo violation).",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for c in COMMANDS:
        body = "\n".join(textwrap.fill(part, HELP_WIDTH)
                         for part in c.description.split("\n") if part)
        examples = "example" + ("s" if len(c.examples) > 1 else "") + ":\n" + "\n".join(
            f"  {line}" for line in c.examples)
        command = sub.add_parser(
            c.name, help=c.help, description=c.help + (f"\n\n{body}" if body else ""),
            epilog=examples, formatter_class=argparse.RawDescriptionHelpFormatter)
        if only is None or c.name == only:
            c.register(command)
            command.set_defaults(func=bodies[c.name])
    return parser


def command_in(argv: Sequence[str]) -> str:
    """The command named on the command line: its first word that is no option ("" if it
    names none: the parser then says so, or gives the help or the version asked for)."""
    names = {c.name for c in COMMANDS}
    word = next((w for w in argv if not w.startswith("-")), "")
    return word if word in names else ""
