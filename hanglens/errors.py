"""The HanglensError tree: every user-facing error renders as `path:line:col: what (hint)`."""

from __future__ import annotations


class HanglensError(Exception):
    """Base of every error hanglens reports to a user as one line."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 col: int | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.col = col
        self.hint = hint

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
                if self.col is not None:
                    where += f":{self.col}"
            where += ": "
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}{self.message}{hint}"


class InputError(HanglensError):
    """The paths given on the command line cannot be read as logs at all."""


class RuleError(HanglensError):
    """A rule file is invalid; `problems` holds every problem found, each already formatted."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"{len(problems)} rule problem(s)")
        self.problems = problems

    def __str__(self) -> str:
        return "\n".join(self.problems)


class UsageError(HanglensError):
    """Options that contradict each other or name something that does not exist."""
