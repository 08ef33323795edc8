// Undo of an add, planning: the notes of the scope that the add of note $id evolved (a version whose
// changed_by is $id; the earliest if several), each with the version that evolution replaced
// (before), the values it wrote (after: the next version, or the note itself when nothing changed it
// since), the note's values now, and every change since (later: version, changed_by).
// Works for a note deleted since: its evolutions stay recorded on the notes it changed.
// Params: $id, scope. Returns: one row per evolved note, by id.
MATCH (v:NoteVersion {user_id: $user_id, agent_id: $agent_id, run_id: $run_id, changed_by: $id})
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})-[:PREVIOUS_VERSION]->(v)
WITH n, min(v.version) AS k
MATCH (n)-[:PREVIOUS_VERSION]->(before:NoteVersion {version: k})
OPTIONAL MATCH (n)-[:PREVIOUS_VERSION]->(later:NoteVersion)
WHERE later.version > k
WITH n, before, later ORDER BY later.version
WITH n, before, collect(later) AS later
WITH n, before, later, head(later) AS nxt
RETURN n.id AS note_id,
       n {.version, .content, .context, .tags, .keywords} AS current,
       before {.version, .content, .context, .tags, .keywords, .replaced_at, .changed_by} AS before,
       CASE WHEN nxt IS NULL THEN NULL ELSE nxt {.version, .content, .context, .tags, .keywords} END AS after,
       [x IN later | {version: x.version, changed_by: x.changed_by}] AS later
ORDER BY note_id
