"""The figures table of a run: each figure beside its anchor (the official server, a published
figure of server-noonien, or a physical floor measured in the same run) and the cost ratio,
as plain text and as markdown."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    group: str
    name: str
    unit: str
    value: float
    p99: float | None = None
    anchor: str = ""
    anchor_value: float | None = None
    anchor_p99: float | None = None
    higher_is_better: bool = False

    @property
    def ratio(self) -> float | None:
        """noon's cost relative to the anchor: below 1 noon does better."""
        if not self.anchor_value or not self.value:
            return None
        if self.higher_is_better:
            return self.anchor_value / self.value
        return self.value / self.anchor_value

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    if unit in ("ops/s", "B", "MiB"):
        return f"{value:,.0f}"
    if unit == "x":
        return f"{value:.1f}"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def figure(value: float | None, p99: float | None, unit: str) -> str:
    if value is None:
        return ""
    text = fmt(value, unit)
    if p99 is not None:
        text += f" / {fmt(p99, unit)}"
    return f"{text} {unit}"


def k_label(n: int | str) -> str:
    n = int(n)
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def section(raw: dict[str, Any], name: str) -> Any:
    """A section's measurements, or None when it did not run or failed (see :func:`failures`)."""
    value = raw.get(name)
    if not value or (isinstance(value, dict) and "error" in value):
        return None
    return value


def failures(raw: dict[str, Any]) -> dict[str, str]:
    """The sections that failed in this run, with their error."""
    return {
        name: value["error"]
        for name, value in raw.items()
        if isinstance(value, dict) and "error" in value
    }


HEADER = ("figure", "noon", "anchor", "anchor value", "ratio")


def cells(row: Row) -> tuple[str, str, str, str, str]:
    ratio = row.ratio
    return (
        row.name,
        figure(row.value, row.p99, row.unit),
        row.anchor,
        figure(row.anchor_value, row.anchor_p99, row.unit),
        f"{ratio:.2f}" if ratio is not None else "",
    )


def format_table(rows: list[Row]) -> str:
    table = [HEADER, *(cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    out, group = [], None
    for i, line in enumerate(table):
        if i and rows[i - 1].group != group:
            group = rows[i - 1].group
            out.append(f"-- {group}")
        out.append(
            "  ".join(
                c.ljust(w) if j in (0, 2) else c.rjust(w)
                for j, (c, w) in enumerate(zip(line, widths, strict=True))
            )
        )
    return "\n".join(out)


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| figure | noon | anchor | anchor value | ratio |", "|---|---:|---|---:|---:|"]
    for d in rows:
        row = Row(**{k: v for k, v in d.items() if k != "ratio"})
        name, value, anchor, anchor_value, ratio = cells(row)
        lines.append(f"| {name.strip()} | {value} | {anchor} | {anchor_value} | {ratio} |")
    return "\n".join(lines)
