"""The one error type of imports and exports."""

from __future__ import annotations

from noon.errors import NoonError

MAX_REPORTED = 20


class TransferError(NoonError, ValueError):
    """Input that cannot be imported (or output that cannot be written). The message names the
    file and, for malformed input, every bad line (up to :data:`MAX_REPORTED`)."""

    @classmethod
    def lines(cls, source: str, problems: list[tuple[int, str]]) -> TransferError:
        shown = [f"  line {no}: {what}" for no, what in problems[:MAX_REPORTED]]
        if len(problems) > MAX_REPORTED:
            shown.append(f"  ... and {len(problems) - MAX_REPORTED} more")
        return cls(
            f"{source}: {len(problems)} malformed line(s); nothing was imported:\n"
            + "\n".join(shown)
        )
