"""docs/glossary.md gives each of its words one meaning, and names every module of noon and
noond whose name carries one of them: a module named with a glossary word and missing from that
word's row is either a second meaning (rename it) or a new module of the same meaning (add it to
the row). Every module a row names exists. A basename used in two packages is listed, with its
modules, in the glossary's table of basenames."""

from __future__ import annotations

import re
from collections import defaultdict

from tests.harness.mesh import ROOT

GLOSSARY = ROOT / "docs" / "glossary.md"


def rows() -> dict[str, str]:
    """Each form of a word of the glossary's table → that word's whole row."""
    out = {}
    for line in GLOSSARY.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("word", "---"):
            continue
        for form in cells[0].split(","):
            out[form.strip().replace(" ", "")] = line
    return out


def modules() -> list[str]:
    """Every module and package of noon and noond, dotted."""
    found = []
    for root in ("noon", "noond"):
        for path in sorted((ROOT / root).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(".".join(parts))
    return found


def test_the_table_holds_the_words_the_issue_found_with_several_meanings() -> None:
    assert {"op", "ops", "journal", "log", "change", "model", "serve", "stream"} <= set(rows())


def row_of(words: dict[str, str], token: str) -> str | None:
    """The row of the word ``token`` is a form of, its plural too (``changes``, ``logs``)."""
    return words.get(token) or (words.get(token[:-1]) if token.endswith("s") else None)


def test_a_plural_is_the_same_word() -> None:
    words = {"log": "log row", "ops": "ops row"}
    assert row_of(words, "logs") == "log row" and row_of(words, "ops") == "ops row"
    assert row_of(words, "logging") is None and row_of(words, "s") is None


def test_a_module_named_with_a_glossary_word_is_in_that_words_row() -> None:
    words = rows()
    strays = []
    for module in modules():
        for token in module.rsplit(".", 1)[-1].split("_"):
            row = row_of(words, token)
            if row is not None and f"`{module}`" not in row:
                strays.append(f"{module} (named with {token!r})")
    assert strays == [], f"rename them or add them to their word's row: {strays}"


def test_every_module_the_table_names_exists() -> None:
    known = set(modules())
    named = set()
    for row in rows().values():
        named |= set(re.findall(r"`((?:noon|noond)\.[a-z_.]+)`", row))
    assert named and named <= known, sorted(named - known)


BASENAMES = re.compile(r"## One basename in two packages\n(.*?)\n## ", re.DOTALL)


def test_every_basename_used_twice_is_listed_with_its_modules() -> None:
    """Each module of noon and noond whose basename another package uses too is named in that
    basename's row of the glossary (so its meaning was checked against the others'), and each
    row lists a basename used twice, with modules that exist."""
    found = BASENAMES.search(GLOSSARY.read_text())
    assert found is not None, "docs/glossary.md lost its section 'One basename in two packages'"
    listed = {}
    for line in found.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            listed[cells[0].strip("`")] = set(re.findall(r"`((?:noon|noond)\.[a-z_.]+)`", cells[1]))
    by_basename: dict[str, set[str]] = defaultdict(set)
    for module in modules():
        path = ROOT / (module.replace(".", "/") + ".py")
        if path.is_file() and path.stem not in ("__main__",):
            by_basename[path.stem].add(module)
    twice = {name: mods for name, mods in by_basename.items() if len(mods) > 1}
    assert listed == twice, (
        f"unlisted or drifted: {sorted(n for n in twice if listed.get(n) != twice[n])}; "
        f"listed but not used twice: {sorted(set(listed) - set(twice))}"
    )
