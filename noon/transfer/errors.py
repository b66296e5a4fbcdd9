"""The one error type of imports and exports."""

from __future__ import annotations

from noon.errors import NoonError

MAX_REPORTED = 20


class TransferError(NoonError, ValueError):
    """Input that cannot be imported (or output that cannot be written). The message names the
    source and, for malformed input, every problem (up to :data:`MAX_REPORTED`)."""

    @classmethod
    def listing(cls, source: str, problems: list[str], what: str = "problem(s)") -> TransferError:
        shown = [f"  {p}" for p in problems[:MAX_REPORTED]]
        if len(problems) > MAX_REPORTED:
            shown.append(f"  ... and {len(problems) - MAX_REPORTED} more")
        return cls(f"{source}: {len(problems)} {what}; nothing was imported:\n" + "\n".join(shown))

    @classmethod
    def lines(cls, source: str, problems: list[tuple[int, str]]) -> TransferError:
        return cls.listing(
            source, [f"line {no}: {what}" for no, what in problems], "malformed line(s)"
        )
