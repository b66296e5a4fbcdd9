"""What ``noon doctor`` finds: one finding per check, with its level and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass

OK, NOTE, WARNING, ERROR = "ok", "note", "warning", "error"


@dataclass(frozen=True)
class Finding:
    check: str
    level: str
    what: str
    fix: str = ""


def render(findings: list[Finding]) -> str:
    out = []
    for f in findings:
        out.append(f"{f.level.upper():<8} {f.check:<13} {f.what}")
        if f.fix:
            out.append(f"{'':<8} {'':<13} {'next' if f.level == NOTE else 'fix'}: {f.fix}")
    errors = sum(f.level == ERROR for f in findings)
    warnings = sum(f.level == WARNING for f in findings)
    out.append("")
    out.append("healthy" if not errors else f"{errors} problem(s) to fix")
    if warnings:
        out[-1] += f", {warnings} warning(s)"
    return "\n".join(out)
