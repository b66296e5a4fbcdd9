"""Every URI tool and view through a real MCP client (in memory)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from noon.store.readmodel import search
from noon.store.readmodel.embedder import available
from tests.harness.mcp import resource_text, tool_text
from tests.harness.uri import Session, make_server, mcp_test, open_store


@mcp_test
async def test_tools_listed_with_strict_schemas_and_annotations(s: Session) -> None:
    tools = {t.name: t for t in (await s.client.list_tools()).tools}
    assert set(tools) >= {
        "read_memory",
        "create_memory",
        "update_memory",
        "delete_memory",
        "add_alias",
        "move_memory",
        "manage_triggers",
        "search_memory",
        "memory_history",
        "rollback_memory",
        "manage_boot",
    }
    for t in tools.values():
        assert t.input_schema["additionalProperties"] is False
        assert t.annotations is not None
    hints = {name: t.annotations for name, t in tools.items() if t.annotations is not None}
    assert hints["read_memory"].read_only_hint is True
    assert hints["delete_memory"].destructive_hint is True
    assert hints["create_memory"].read_only_hint is False
    # the agent is told which search runs here: hybrid with the semantic extra, else lexical
    said = "hybrid: BM25 full-text fused" if available() else "(lexical, not semantic)"
    assert said in (tools["search_memory"].description or "")
    query = tools["search_memory"].input_schema["properties"]["query"]["description"]
    assert said.strip("()") in query
    assert said.strip("()") in (tools["recall"].description or "")


@mcp_test
async def test_create_read_and_structured_output(s: Session) -> None:
    made = await s.create("core://", "agent", "I am the agent.", priority=0)
    assert made["uri"] == "core://agent"
    text, data = await s.call("read_memory", uri="core://agent")
    assert "MEMORY: core://agent" in text and "I am the agent." in text
    assert f"Memory ID: {made['memory_id']}" in text and f"Version: {made['version']}" in text
    assert data["memory_id"] == made["memory_id"] and data["version"] == made["version"]
    assert data["priority"] == 0 and data["conflicted"] is False
    child = await s.create("core://agent", None, "first numbered child")
    assert child["uri"] == "core://agent/1"
    assert (await s.create("core://agent", None, "second"))["uri"] == "core://agent/2"
    text = await s.read("core://agent")
    assert "CHILD MEMORIES" in text and "- URI: core://agent/1" in text
    root = await s.read("CORE://")
    assert "core://agent" in root


@mcp_test
async def test_auto_names_follow_the_highest_numbered_child(s: Session) -> None:
    await s.create("core://", "agent", "parent")
    for title in ("9", "10", "0012", "abc", "99x"):
        await s.create("core://agent", title, f"titled {title}")
    made = await s.create("core://agent", None, "auto")
    assert made["uri"] == "core://agent/11"  # "0012" has a leading zero: a name, not a number
    await s.call("move_memory", uri="core://agent/11", new_uri="core://elsewhere")
    assert (await s.create("core://agent", None, "again"))["uri"] == "core://agent/11"


@mcp_test
async def test_create_errors(s: Session) -> None:
    await s.create("core://", "a", "x")
    assert "disclosure is required" in await s.fail(
        "create_memory", parent_uri="core://", content="x", priority=1, disclosure="  "
    )
    assert "Invalid title" in await s.fail(
        "create_memory",
        parent_uri="core://",
        title="has space",
        content="x",
        priority=1,
        disclosure="d",
    )
    assert "Parent 'core://nope' does not exist" in await s.fail(
        "create_memory", parent_uri="core://nope", content="x", priority=1, disclosure="d"
    )
    assert "already exists" in await s.fail(
        "create_memory", parent_uri="core://", title="a", content="x", priority=1, disclosure="d"
    )
    assert "reserved" in await s.fail(
        "create_memory", parent_uri="system://", content="x", priority=1, disclosure="d"
    )
    missing = await s.fail("create_memory", parent_uri="core://", content="x", priority=1)
    assert "disclosure" in missing and "create_memory" in missing
    assert "priority" in await s.fail(
        "create_memory", parent_uri="core://", content="x", priority=-1, disclosure="d"
    )


@mcp_test
async def test_misspelled_arguments_are_refused_with_a_hint(s: Session) -> None:
    await s.create("core://", "a", "hello")
    err = await s.fail("update_memory", uri="core://a", oldString="hello", new_string="bye")
    assert "oldString" in err and "update_memory" in err
    assert 'did you mean "oldString" -> "old_string"?' in err
    assert "hello" in await s.read("core://a")
    assert "No update fields" in await s.fail("update_memory", uri="core://a")


@mcp_test
async def test_update_patch_append_metadata_and_expected_version(s: Session) -> None:
    made = await s.create("core://", "note", 'She said "hi" \u2014 twice.\nSecond line.')
    _, data = await s.call(
        "update_memory",
        uri="core://note",
        old_string="Second line.",
        new_string="Line two.",
        expected_version=made["version"],
    )
    v2 = data["version"]
    assert v2 != made["version"]
    assert "Line two." in await s.read("core://note")
    stale = await s.fail(
        "update_memory", uri="core://note", append="x", expected_version=made["version"]
    )
    assert "changed since you read it" in stale and v2 in stale
    # Normalised match: straight quotes and a plain dash find the curly/em-dash original.
    text, _ = await s.call(
        "update_memory", uri="core://note", old_string='"hi" - twice', new_string="hello once"
    )
    assert "normalising" in text
    assert "She said hello once." in await s.read("core://note")
    await s.call("update_memory", uri="core://note", append="Appended.")
    assert "Line two.\nAppended." in await s.read("core://note")
    # as the tool's description says: the line break is noon's, Nocturne adds none
    tools = {t.name: t for t in (await s.client.list_tools()).tools}
    said = tools["update_memory"].input_schema["properties"]["append"]
    assert "one line break goes before it" in json.dumps(said)
    await s.call("update_memory", uri="core://note", priority=5, disclosure="When asked")
    body = await s.read("core://note")
    assert "Priority: 5" in body and "Disclosure: When asked" in body
    assert "not found" in await s.fail(
        "update_memory", uri="core://note", old_string="no such text", new_string="x"
    )
    await s.call("update_memory", uri="core://note", append=" x x")
    ambiguous = await s.fail("update_memory", uri="core://note", old_string="x", new_string="y")
    assert "x x" in await s.read("core://note") and "In 'core://note'" in ambiguous
    assert "identical" in await s.fail(
        "update_memory", uri="core://note", old_string="x", new_string="x"
    )
    assert "Pick one" in await s.fail(
        "update_memory", uri="core://note", old_string="a", new_string="b", append="c"
    )
    missing = await s.fail("update_memory", uri="core://missing", append="x")
    assert missing.startswith("Error: Memory 'core://missing' not found."), missing


@mcp_test
async def test_alias_move_and_cycles(s: Session) -> None:
    a = await s.create("core://", "a", "node A")
    await s.create("core://a", "kid", "child of A")
    await s.create("core://", "b", "node B")
    await s.call(
        "add_alias",
        new_uri="core://b/a2",
        target_uri="core://a",
        priority=3,
        disclosure="When in B",
    )
    body = await s.read("core://b/a2")
    assert f"Memory ID: {a['memory_id']}" in body and "Other Aliases: 1" in body
    assert "child of A" in await s.read("core://b/a2/kid")
    assert "cycle" in await s.fail("add_alias", new_uri="core://a/kid/loop", target_uri="core://a")
    assert "cycle" in await s.fail("move_memory", uri="core://b", new_uri="core://b/a2/b")
    await s.call("manage_boot", add=["core://a"])
    _, data = await s.call("move_memory", uri="core://a", new_uri="core://b/moved")
    assert data["memory_id"] == a["memory_id"]
    assert "not found" in await s.fail("read_memory", uri="core://a")
    assert "child of A" in await s.read("core://b/moved/kid")
    assert "core://b/moved" in await s.read("system://boot")  # boot follows the node
    assert "already exists" in await s.fail(
        "move_memory", uri="core://b/moved", new_uri="core://b/a2"
    )


@mcp_test
async def test_delete_alias_last_path_children_and_recursive(s: Session) -> None:
    await s.create("core://", "p", "parent")
    await s.create("core://p", "c", "child")
    await s.call(
        "add_alias", new_uri="core://p2", target_uri="core://p", priority=1, disclosure="d"
    )
    _, data = await s.call("delete_memory", uri="core://p")
    assert data["deleted"] == 0
    assert "child" in await s.read("core://p2/c")
    err = await s.fail("delete_memory", uri="core://p2")
    assert "unreachable" in err and "recursive" in err
    _, data = await s.call("delete_memory", uri="core://p2", recursive=True)
    assert data["deleted"] == 2
    assert "(None" in await s.read("system://orphans")
    assert "not found" in await s.fail("read_memory", uri="core://p2/c")


@mcp_test
async def test_triggers_glossary_links_and_word_boundaries(s: Session) -> None:
    await s.create("core://", "salem", "Salem is the user.")
    await s.create("core://", "notes", "Talked with salem today. Salemander is unrelated.")
    text, data = await s.call("manage_triggers", uri="core://salem", add=["Salem", "user"])
    assert data["added"] == ["Salem", "user"] and "Current: [Salem, user]" in text
    _, data = await s.call("manage_triggers", uri="core://salem", add=["Salem"], remove=["nope"])
    assert data["existing"] == ["Salem"] and data["missing"] == ["nope"]
    body = await s.read("core://notes")
    assert "- @Salem -> core://salem" in body
    assert "Cannot add and remove" in await s.fail(
        "manage_triggers", uri="core://salem", add=["x"], remove=["x"]
    )
    gl = await s.read("system://glossary")
    assert "- Salem\n  -> core://salem" in gl
    own = await s.read("core://salem")
    assert "GLOSSARY" not in own  # a memory does not link to itself


@mcp_test
async def test_search_ranks_filters_and_scores(s: Session) -> None:
    await s.create(
        "core://", "deploy", "How we deploy noon with systemd units.", disclosure="When deploying"
    )
    await s.create("core://", "tea", "The user likes green tea.")
    await s.create("project://", "noon", "noon deploys via systemd too; deploy notes.")
    text, data = await s.call("search_memory", query="deploy systemd")
    uris = [r["uri"] for r in data["results"]]
    assert set(uris) == {"core://deploy", "project://noon"}
    assert all(r["score"] > 0 for r in data["results"]) and "score" in text
    _, data = await s.call("search_memory", query="deploy", domain="project")
    assert [r["uri"] for r in data["results"]] == ["project://noon"]
    _, data = await s.call("search_memory", query="gre")  # prefix
    assert [r["uri"] for r in data["results"]] == ["core://tea"]
    text, _ = await s.call("search_memory", query="zebra")
    assert "No matching memories found across all domains" in text
    assert "Unknown domain" in await s.fail("search_memory", query="x", domain="nope")
    assert "limit" in await s.fail("search_memory", query="x", limit=0)


@mcp_test
async def test_a_hit_shows_the_version_and_text_read_memory_shows(s: Session) -> None:
    """A hit's version and snippet are the memory's current ones (read from the row the fold
    projected, not from its ops): after an edit, the edit's."""
    await s.create("core://", "kettle", "The kettle is blue and old.")
    _, edited = await s.call(
        "update_memory", uri="core://kettle", old_string="blue", new_string="red"
    )
    text, data = await s.call("search_memory", query="kettle")
    _, read = await s.call("read_memory", uri="core://kettle")
    assert [r["version"] for r in data["results"]] == [read["version"]] == [edited["version"]]
    assert "The kettle is red and old." in text and "blue" not in text


@mcp_test
async def test_history_and_rollback(s: Session) -> None:
    v1 = (await s.create("core://", "h", "version one"))["version"]
    await s.call("update_memory", uri="core://h", old_string="one", new_string="two")
    text, data = await s.call("memory_history", uri="core://h")
    assert [v["version"] for v in data["versions"]][-1] == v1 and "[current]" in text
    view = await s.read("system://history/core://h")
    assert v1 in view
    _, data = await s.call("rollback_memory", uri="core://h", version=v1)
    assert "version one" in await s.read("core://h")
    assert "not found" in await s.fail("rollback_memory", uri="core://h", version="zz:1")
    again, _ = await s.call("rollback_memory", uri="core://h", version=v1)  # a retry
    assert again.startswith("Success (already written)")
    _, now = await s.call("read_memory", uri="core://h")
    said = await s.fail(
        "rollback_memory", uri="core://h", version=v1, expected_version=now["version"]
    )
    assert "already reads as" in said


@mcp_test
async def test_rollback_puts_back_what_the_later_edits_changed_beside_the_text(s: Session) -> None:
    v1 = (await s.create("core://", "r", "first words", priority=3, disclosure="When asked"))[
        "version"
    ]
    await s.call(
        "update_memory",
        uri="core://r",
        old_string="first",
        new_string="second",
        priority=9,
        disclosure="Always",
    )
    text, data = await s.call("rollback_memory", uri="core://r", version=v1)
    assert "other element(s) put back" in text and data["version"] != v1
    shown, now = await s.call("read_memory", uri="core://r")
    assert "first words" in shown and "second" not in shown
    assert (now["priority"], now["disclosure"]) == (3, "When asked")
    _, hist = await s.call("memory_history", uri="core://r")
    assert len(hist["versions"]) == 3  # nothing lost: the rollback is a new version


@mcp_test
async def test_views_and_view_errors(s: Session) -> None:
    for i in range(12):
        await s.create("core://", f"m{i}", f"memory {i}")
    assert "# Total: 12 unique nodes" in await s.read("system://index/core")
    assert "Showing: 3 most recent" in await s.read("system://recent/3")
    assert "Invalid number" in await s.fail("read_memory", uri="system://recent/x")
    assert "requires a domain" in await s.fail("read_memory", uri="system://index")
    assert "Unknown domain 'zz'" in await s.fail("read_memory", uri="system://index/zz")
    diag = await s.read("system://diagnostic/core")
    assert "Crowded parents" in diag and "core:// (12 children)" in diag
    assert "(None" in await s.read("system://conflicts")
    assert "Unknown view" in await s.fail("read_memory", uri="system://nope")
    assert "not a memory URI" in await s.fail("read_memory", uri="no scheme here")
    boot = await s.read("system://boot")
    assert "No boot memories yet" in boot
    _, data = await s.call("manage_boot", add=["core://m3"])
    assert data["boot"] == ["core://m3"]
    boot = await s.read("system://boot")
    assert "# Loaded: 1/1" in boot and "memory 3" in boot
    _, data = await s.call("manage_boot", remove=["core://m3"])
    assert data["boot"] == []


@mcp_test
async def test_resources_list_and_read(s: Session) -> None:
    await s.create("core://", "r", "resource body")
    await s.call("manage_boot", add=["core://r"])
    listed = {str(r.uri) for r in (await s.client.list_resources()).resources}
    assert "system://boot" in listed
    got = await s.client.read_resource("system://boot")
    assert "resource body" in resource_text(got)


def test_arguments_are_checked_once_against_the_listed_schema() -> None:
    """The server validates URI-tool arguments against the schema tools/list shows (one
    check, with a hint at the argument a misspelled one probably meant)."""
    from noon.mcp.families import uri_family
    from noon.mcp.validation import ArgumentValidator

    update = next(t for t in uri_family().tools if t.name == "update_memory")
    check = ArgumentValidator(update.input_schema, hints=True)
    assert check.problems({"uri": "core://a", "old_string": "x", "new_string": "y"}) == []
    assert check.problems({"uri": "core://a", "oldString": "x"}) == [
        'Unrecognized key: "oldString" (did you mean "oldString" -> "old_string"?)'
    ]
    assert check.problems({}) == ["Invalid input: expected string, received undefined at uri"]
    assert check.problems({"uri": "core://a", "priority": "high"}) == [
        "Invalid input: expected integer, received string at priority"
    ]


async def test_knowledge_graph_entities_read_as_kg_uris(tmp_path: Path) -> None:
    from noon.mcp.server import create_server

    store, settings = open_store(tmp_path, "laptop")
    async with Client(create_server(store, settings, {"uri", "kg"})) as client:
        s = Session(client)
        await s.call(
            "create_entities",
            entities=[
                {"name": "Ada Lovelace", "entityType": "person", "observations": ["wrote notes"]}
            ],
        )
        body = await s.read("kg://Ada Lovelace")
        assert "type: person" in body and "- wrote notes" in body
        assert "kg://Ada Lovelace (person)" in await s.read("kg://")
        assert "No entity named" in await s.fail("read_memory", uri="kg://Nobody")
        assert "knowledge-graph" in await s.fail(
            "create_memory", parent_uri="kg://", content="x", priority=1, disclosure="d"
        )


async def test_an_imported_nocturne_database_reads_through_the_uri_tools(tmp_path: Path) -> None:
    import argparse

    from noon.transfer import import_command
    from tests.harness.nocturne import nocturne_db

    nocturne_db(tmp_path / "nocturne.db")
    d = tmp_path / "noon"
    parser = argparse.ArgumentParser()
    import_command.configure(parser)
    args = parser.parse_args([str(tmp_path / "nocturne.db"), "--dir", str(d), "--node-id", "n1"])
    assert import_command.run(args) == 0
    store, settings = open_store(d, "n1")
    async with Client(make_server(store, settings)) as client:
        s = Session(client)
        boot = await s.read("system://boot")
        assert "# Loaded: 2/2" in boot and "Agent v3 (current)" in boot
        notes = await s.read("core://agent/my_notes")
        assert "Notes ✓" in notes and "writer://notes" in notes  # the alias is listed
        await s.call("update_memory", uri="core://agent", append="Salem is the user.")
        assert "- @Salem -> core://agent/identity" in await s.read("core://agent")
        _, hist = await s.call("memory_history", uri="core://agent")
        assert len(hist["versions"]) == 4
        _, found = await s.call("search_memory", query="notes")
        assert found["results"][0]["uri"] in ("writer://notes", "core://agent/my_notes")


@mcp_test
async def test_concurrent_tool_calls_in_one_server_are_consistent(s: Session) -> None:
    """Tool calls run in worker threads at once (plus the search warm-up): every write lands,
    every read sees a consistent graph."""
    import anyio

    await s.create("core://", "hub", "hub")
    errors: list[str] = []

    async def writer(i: int) -> None:
        await s.create("core://hub", f"c{i}", f"concurrent child {i}")
        await s.call("update_memory", uri="core://hub", append=f"line {i}")

    async def reader() -> None:
        for _ in range(5):
            r = await s.client.call_tool("search_memory", {"query": "concurrent child"})
            if r.is_error:
                errors.append(tool_text(r))
            await s.read("system://index/core")

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(writer, i)
        for _ in range(3):
            tg.start_soon(reader)
    assert errors == []
    text, data = await s.call("read_memory", uri="core://hub")
    assert len(data["children"]) == 20 and not data["conflicted"]
    assert all(f"line {i}\n" in text + "\n" for i in range(20))
    _, found = await s.call("search_memory", query="concurrent child", limit=50)
    assert len(found["results"]) == 20


async def test_create_points_at_a_likely_duplicate(tmp_path: Path) -> None:
    store, settings = open_store(tmp_path, "laptop")
    async with Client(make_server(store, settings)) as client:
        s = Session(client)
        await s.create("core://", "tea", "The user drinks green tea every morning, never coffee.")
        await s.create("core://", "deploy", "Deploys go through systemd units on every machine.")
        text, data = await s.call(
            "create_memory",
            parent_uri="core://",
            title="drinks",
            content="Every morning the user drinks green tea, not coffee.",
            priority=1,
            disclosure="d",
        )
        assert data["related"] == ["core://tea"] and "POSSIBLE DUPLICATE" in text
        text, data = await s.call(
            "create_memory",
            parent_uri="core://",
            title="music",
            content="Plays the cello on weekends.",
            priority=1,
            disclosure="d",
        )
        assert data["related"] == [] and "POSSIBLE DUPLICATE" not in text


@mcp_test
async def test_results_name_a_memory_memory_id_never_node_id(s: Session) -> None:
    """Issue 15: node_id means a machine everywhere else in noon; tool results say memory_id."""
    made = await s.create("core://", "m", "a memory about tea")
    await s.create("core://m", "kid", "child")
    results = [
        made,
        (await s.call("read_memory", uri="core://m"))[1],
        (await s.call("read_memory", uri="system://history/core://m"))[1],
        (await s.call("memory_history", uri="core://m"))[1],
        (await s.call("search_memory", query="tea"))[1]["results"][0],
        (await s.call("manage_triggers", uri="core://m", add=["tea"]))[1],
        (await s.call("add_alias", new_uri="core://m2", target_uri="core://m"))[1],
        (await s.call("move_memory", uri="core://m2", new_uri="core://m3"))[1],
        (await s.call("delete_memory", uri="core://m3"))[1],
    ]
    for data in results:
        assert data["memory_id"] == made["memory_id"] and "node_id" not in data, data


@mcp_test
async def test_no_hold_on_nudge_under_a_domain_root(s: Session) -> None:
    text, _ = await s.call(
        "create_memory", parent_uri="core://", title="a", content="x", priority=1, disclosure="d"
    )
    assert "HOLD ON" not in text and "SYSTEM REMINDER" in text
    text, _ = await s.call(
        "create_memory", parent_uri="core://a", title="b", content="y", priority=1, disclosure="d"
    )
    assert "[HOLD ON] Do you know what 'core://a' says?" in text
    text, _ = await s.call("add_alias", new_uri="project://a", target_uri="core://a")
    assert "HOLD ON" not in text
    text, _ = await s.call("add_alias", new_uri="core://a/again", target_uri="core://a/b")
    assert "[HOLD ON] Do you know what 'core://a' says?" in text


async def test_a_keyword_no_memory_mentions_is_bound_with_a_word(tmp_path: Path) -> None:
    store, settings = open_store(tmp_path, "laptop")
    async with Client(make_server(store, settings)) as client:
        await _keyword_note(Session(client))


async def _keyword_note(s: Session) -> None:
    await s.create("core://", "salem", "Salem is the user.")
    await s.create("core://", "notes", "Talked with Salem today.")
    text, data = await s.call("manage_triggers", uri="core://salem", add=["Salem", "zanzibar"])
    assert data["added"] == ["Salem", "zanzibar"] and data["unmentioned"] == ["zanzibar"]
    assert "No other memory mentions 'zanzibar' yet" in text and "'Salem'" not in text
    assert "zanzibar" in data["current"]  # still bound
    text, data = await s.call("manage_triggers", uri="core://salem", add=["today"])
    assert data["unmentioned"] == [] and "NOTE" not in text


@mcp_test
async def test_a_missing_memory_in_an_empty_domain_points_at_a_real_one(s: Session) -> None:
    await s.create("core://", "a", "x")
    err = await s.fail("read_memory", uri="project://nothing")
    assert "system://index/project" not in err
    assert "domain 'project' has no memories" in err and "system://index/core" in err
    err = await s.fail("update_memory", uri="core://nothing", append="x")
    assert "read system://index/core to see what exists" in err


@mcp_test
async def test_resource_templates_are_listed_and_readable(s: Session) -> None:
    await s.create("core://", "a", "template body")
    listed = await s.client.list_resource_templates()
    templates = {t.uri_template for t in listed.resource_templates}
    assert {"{domain}://{+path}", "system://index/{domain}", "system://history/{+uri}"} <= templates
    got = await s.client.read_resource("core://a")
    assert "template body" in resource_text(got)
    got = await s.client.read_resource("system://index/core")
    assert "core://a" in resource_text(got)
    with pytest.raises(Exception, match="Resource core://nope not found"):
        await s.client.read_resource("core://nope")


async def test_kg_only_server_answers_resource_templates_with_none(tmp_path: Path) -> None:
    from noon.mcp.server import create_server

    store, settings = open_store(tmp_path, "laptop")
    async with Client(create_server(store, settings, {"kg"}), mode="legacy") as client:
        assert (await client.list_resource_templates()).resource_templates == []


def _nullable_types(schema: object) -> list[object]:
    if isinstance(schema, dict):
        found = [schema] if isinstance(schema.get("type"), list) else []
        return found + [x for v in schema.values() for x in _nullable_types(v)]
    if isinstance(schema, list):
        return [x for v in schema for x in _nullable_types(v)]
    return []


async def test_no_schema_uses_a_type_list(tmp_path: Path) -> None:
    """Strict clients flag "type": [..., "null"]; optional fields are optional properties."""
    from noon.mcp.server import create_server

    store, settings = open_store(tmp_path, "laptop")
    async with Client(create_server(store, settings, {"uri", "kg"})) as client:
        for tool in (await client.list_tools()).tools:
            assert _nullable_types(tool.input_schema) == [], tool.name
            assert _nullable_types(tool.output_schema) == [], tool.name


@mcp_test
async def test_update_memory_converts_literal_newlines_and_keeps_crlf(s: Session) -> None:
    await s.create("core://", "n", "first line\nsecond line")
    text, _ = await s.call(
        "update_memory", uri="core://n", old_string="first line\\nsecond", new_string="1\\n2"
    )
    assert "converted literal '\\n' sequences" in text
    assert "1\n2 line" in await s.read("core://n")
    await s.create("core://", "w", "dos\r\nline\r\n")
    await s.call("update_memory", uri="core://w", old_string="line", new_string="a\nb")
    assert "dos\r\na\r\nb\r\n" in await s.read("core://w")


@mcp_test
async def test_a_memory_deleted_on_one_machine_keeps_its_history_under_its_old_uri(
    s: Session,
) -> None:
    made = await s.create("core://", "gone", "soon deleted")
    await s.call("update_memory", uri="core://gone", append="edited once")
    text, data = await s.call("delete_memory", uri="core://gone")
    node = data["memory_id"]
    assert "system://history/core://gone" in text and f"system://node/{node}" in text
    read = await s.read(f"system://node/{node}")
    assert "⚠ DELETED by" in read and "edited once" in read
    assert "another machine" not in read and "ORPHAN" not in read
    view = await s.read("system://history/core://gone")
    assert "[current]" in view and "deleted" in view and view.count(f"- {made['version']}") == 1
    _, hist = await s.call("memory_history", uri="core://gone")
    assert hist["memory_id"] == node and len(hist["versions"]) == 3
    assert "not found" in await s.fail("read_memory", uri="core://gone")
    assert "not found" in await s.fail("read_memory", uri="system://history/core://never")


@mcp_test
async def test_search_ranks_with_bm25_and_finds_cjk_text(s: Session) -> None:
    await s.create("core://", "memory", "记忆系统把每台机器的笔记同步起来。", disclosure="同步")
    await s.create("core://", "tea", "用户早上喝绿茶。")
    await s.create("core://", "mixed", "The sync of 记忆 happens on every machine; sync sync.")
    _, data = await s.call("search_memory", query="记忆")
    assert {r["uri"] for r in data["results"]} == {"core://memory", "core://mixed"}
    _, data = await s.call("search_memory", query="绿茶")
    assert [r["uri"] for r in data["results"]] == ["core://tea"]
    _, data = await s.call("search_memory", query="sync")
    # BM25: the memory saying "sync" three times in a short text ranks first
    assert data["results"][0]["uri"] == "core://mixed"


@mcp_test
async def test_search_ignores_stop_words_and_finds_other_forms_of_a_word(s: Session) -> None:
    """A question as asked: its function words find nothing, its other words find the memory
    in another form (stemmed), and a fragment still finds the words it starts."""
    await s.create("core://", "lake", "Melanie painted a lake sunrise last year.")
    await s.create("core://", "chatter", "When did it happen? When did you say it did? Did it?")
    await s.create("core://", "kids", "Melanie is busy with the kids and work.")
    _, data = await s.call("search_memory", query="When did Melanie paint a sunrise?")
    assert data["results"][0]["uri"] == "core://lake"
    assert "core://chatter" not in [r["uri"] for r in data["results"]]
    _, data = await s.call("search_memory", query="sunr")
    assert [r["uri"] for r in data["results"]] == ["core://lake"]


async def test_search_ranks_the_newest_memories_when_too_many_hold_the_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound on ranked memories: past it, the newest holding every word are ranked, and a
    rarer word still finds an older memory."""
    monkeypatch.setattr(search, "RANKED", 3)
    store, settings = open_store(tmp_path, "laptop")
    async with Client(make_server(store, settings)) as client:
        s = Session(client)
        await s.create("core://", "old", "tea tea tea, and oolong")
        for i in range(4):
            await s.create("core://", f"n{i}", f"tea number {i} with a longer text around it")
        _, data = await s.call("search_memory", query="tea")
        assert {r["uri"] for r in data["results"]} == {"core://n1", "core://n2", "core://n3"}
        _, data = await s.call("search_memory", query="tea oolong")
        assert data["results"][0]["uri"] == "core://old"
