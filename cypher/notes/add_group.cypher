// A-MEM adds of one scope in ONE statement and transaction: the single add (a list of one) and the
// agentic ingest's ordered write step (one round trip for a run of consecutive notes). Each write, in
// list order (a CALL subquery sees the writes of the rows before it):
// - creates the note, idempotently: the MERGE names the whole key of the constraint
//   note_scope_id_unique (ids are unique per scope), so it takes the constraint's lock (concurrent
//   adds of one id make one note) and never sees another scope's note; an id already in its scope is
//   left untouched and reported, and nothing else of that write happens;
// - evolves its neighbours: each keeps its previous values as a NoteVersion (never its content); a
//   dummy write takes the neighbour's write lock before its values are read, so two evolutions of one
//   neighbour in parallel serialise and both leave a version (no lost update);
// - creates its typed links.
// Neighbours and link targets are matched in the note's own scope only.
// Params: $writes: list of {note (map of note properties, see store/records.note_params), embedding,
//         updates: list of {id, uid, context, tags, keywords, embedding (null: keep the vector),
//         expected_version (null: no check)}, links: list of {target_id, type, reason, strength, created_at?, caused_by?}}, $now.
// Returns: one row per write: i, created, versions (list of {id, version, ok}: ok is false when the
//          neighbour was not at expected_version; a neighbour not found returns no entry), links
//          (list of {target_id, type}). The caller rolls back on a conflict.
UNWIND range(0, size($writes) - 1) AS i
WITH i, $writes[i] AS w
CALL (w) {
  MERGE (n:Note {id: w.note.id, user_id: w.note.user_id, agent_id: w.note.agent_id, run_id: w.note.run_id})
  ON CREATE SET
    n.content = w.note.content, n.content_sha = w.note.content_sha,
    n.event_time = w.note.event_time, n.event_time_text = w.note.event_time_text,
    n.created_at = w.note.created_at, n.updated_at = w.note.updated_at,
    n.keywords = w.note.keywords, n.tags = w.note.tags, n.context = w.note.context,
    n.category = w.note.category, n.source_id = w.note.source_id, n.metadata_json = w.note.metadata_json,
    n.enrichment = w.note.enrichment, n.retrieval_count = 0, n.version = 1,
    n.embed_text_variant = w.note.embed_text_variant, n._new = true
  WITH n, coalesce(n._new, false) AS created
  REMOVE n._new
  RETURN n, created
}
CALL (n, created, w) {
  WITH n, w WHERE created
  CALL db.create.setNodeVectorProperty(n, 'embedding', w.embedding)
}
CALL (n, created, w) {
  WITH n, w WHERE created
  UNWIND w.updates AS u
  MATCH (m:Note {id: u.id, user_id: n.user_id, agent_id: n.agent_id, run_id: n.run_id})
  // the dummy write takes the node's write lock before its version is read (see the header)
  SET m._lock = true
  WITH n, u, m, (u.expected_version IS NULL OR m.version = u.expected_version) AS ok
  CREATE (m)-[:PREVIOUS_VERSION]->(:NoteVersion {
    uid: u.uid, note_id: m.id, version: m.version, content: m.content, context: m.context,
    tags: m.tags, keywords: m.keywords, replaced_at: $now, changed_by: n.id,
    user_id: m.user_id, agent_id: m.agent_id, run_id: m.run_id})
  SET m.context = u.context, m.tags = u.tags, m.keywords = u.keywords,
      m.version = m.version + 1, m.updated_at = $now
  REMOVE m._lock
  WITH u, m, ok
  CALL (u, m) {
    // a null embedding: the neighbour keeps its search vector (evolution_reembed off)
    WITH u, m WHERE u.embedding IS NOT NULL
    CALL db.create.setNodeVectorProperty(m, 'embedding', u.embedding)
  }
  RETURN collect({id: m.id, version: m.version, ok: ok}) AS versions
}
CALL (n, created, w) {
  WITH n, w WHERE created
  UNWIND w.links AS l
  MATCH (t:Note {id: l.target_id, user_id: n.user_id, agent_id: n.agent_id, run_id: n.run_id})
  WHERE t <> n AND l.type IN ['RELATED_TO', 'SUPPORTS', 'CONTRADICTS', 'ELABORATES', 'FOLLOWS', 'SAME_TOPIC']
  FOREACH (_ IN CASE WHEN l.type = 'RELATED_TO' THEN [1] ELSE [] END |
    MERGE (n)-[r:RELATED_TO]->(t)
    SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
        r.caused_by = coalesce(l.caused_by, n.id),
        r.user_id = n.user_id, r.agent_id = n.agent_id, r.run_id = n.run_id)
  FOREACH (_ IN CASE WHEN l.type = 'SUPPORTS' THEN [1] ELSE [] END |
    MERGE (n)-[r:SUPPORTS]->(t)
    SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
        r.caused_by = coalesce(l.caused_by, n.id),
        r.user_id = n.user_id, r.agent_id = n.agent_id, r.run_id = n.run_id)
  FOREACH (_ IN CASE WHEN l.type = 'CONTRADICTS' THEN [1] ELSE [] END |
    MERGE (n)-[r:CONTRADICTS]->(t)
    SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
        r.caused_by = coalesce(l.caused_by, n.id),
        r.user_id = n.user_id, r.agent_id = n.agent_id, r.run_id = n.run_id)
  FOREACH (_ IN CASE WHEN l.type = 'ELABORATES' THEN [1] ELSE [] END |
    MERGE (n)-[r:ELABORATES]->(t)
    SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
        r.caused_by = coalesce(l.caused_by, n.id),
        r.user_id = n.user_id, r.agent_id = n.agent_id, r.run_id = n.run_id)
  FOREACH (_ IN CASE WHEN l.type = 'FOLLOWS' THEN [1] ELSE [] END |
    MERGE (n)-[r:FOLLOWS]->(t)
    SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
        r.caused_by = coalesce(l.caused_by, n.id),
        r.user_id = n.user_id, r.agent_id = n.agent_id, r.run_id = n.run_id)
  FOREACH (_ IN CASE WHEN l.type = 'SAME_TOPIC' THEN [1] ELSE [] END |
    MERGE (n)-[r:SAME_TOPIC]->(t)
    SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
        r.caused_by = coalesce(l.caused_by, n.id),
        r.user_id = n.user_id, r.agent_id = n.agent_id, r.run_id = n.run_id)
  RETURN collect({target_id: t.id, type: l.type}) AS links
}
RETURN i, created, versions, links
ORDER BY i
