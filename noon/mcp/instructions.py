"""What a client is told about the URI-graph tools when it connects (MCP ``instructions``)."""

INSTRUCTIONS = """\
noon is your long-term memory, shared by all your sessions on all of this person's machines.
Memories are addressed by URIs like core://agent/identity; a memory can have children, aliases
(several URIs for one memory), a priority (0 = most important) and a disclosure (WHEN to
recall it).

Workflow:
1. At the start of every session (and after your context was compacted) call
   read_memory("system://boot") and read it fully before answering.
2. Before answering about something memory may cover, search_memory with words from the
   conversation, then read_memory the best hits. Follow children and glossary links.
3. Before creating a memory, search for an existing one on the topic. Prefer update_memory
   over create_memory: one dense, current memory beats several overlapping ones.
4. Edit by quoting: read the memory, then update_memory with old_string copied from it and
   the new_string to put there (or append). Pass expected_version from your read to refuse
   edits to a memory that changed meanwhile.
5. Write when something would change your future behaviour: corrections, the person's
   preferences, decisions, lessons. Give every memory a disclosure that fires BEFORE you would
   need it ("When the user asks about deployment").
6. Move or rename with move_memory (one atomic step); never delete and recreate.
7. Undo a tool call that went wrong with undo_change: memory_history lists the changes that
   touched a memory, each with its change id.
Views: system://boot, system://index/<domain>, system://recent[/N], system://glossary,
system://diagnostic/<domain>, system://conflicts, system://orphans, system://history/<uri>.
Memories edited concurrently on two machines show a CONCURRENT VERSIONS note: merge them with
update_memory.
"""
