"""Errors that are the user's to fix: the CLI turns them into exit code 2 and a clear message."""

from __future__ import annotations


class UserError(Exception):
    """Bad input or usage. The message says what was wrong and what was expected."""


class SheetError(UserError):
    """A problem in a cue sheet, located by file, line and cue id where they are known."""

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None,
        cue: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.cue = cue
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = self.file or "<sheet>"
        if self.line is not None:
            where += f":{self.line}"
        if self.cue:
            where += f": cue {self.cue!r}"
        return f"{where}: {self.message}"


class SheetErrors(UserError):
    """Every problem found in one sheet (the validator reports them all, not just the first)."""

    def __init__(self, errors: list[SheetError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))
