"""docs/performance.md is generated (``python -m bench.readme_section``) from the published
results file and ``bench/measured_apart.md``: a section written into the page by hand would be
lost at the next regeneration, so the page must be exactly what the two give."""

from __future__ import annotations

import orjson

from bench.readme_section import OUT, RESULTS, page


def test_the_performance_page_is_what_the_results_and_measured_apart_give() -> None:
    results = orjson.loads(RESULTS.read_bytes())
    generated = page(results, RESULTS.parent, OUT)
    assert generated == OUT.read_text(), (
        "docs/performance.md differs from what bench.readme_section writes: add figures "
        "measured apart from bench.run to bench/measured_apart.md, then run "
        "`python -m bench.readme_section`"
    )
