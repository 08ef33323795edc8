// Where each of some notes stands in time (issue 28): its valid_to, the notes that superseded it
// (directly), every newer note along SUPERSEDES chains (to find the current one), every older note it
// superseded (its dated history) and the notes it clashes with (CONFLICTS_WITH, either way).
// valid_to is read from the SUPERSEDES relationships themselves (the earliest `at` of those reaching the
// note), not from the stored property: a superseding note deleted since no longer ends anything.
// Reads hold the scope: only notes and relationships of the scope are followed, so a relationship
// into another scope that raw Cypher wrote is never read.
// Params: $ids, scope. Returns one row per note found: id, since, valid_to, superseded_by (ids),
// newer, older and conflicts (lists of {id, content, event_time, event_time_text, created_at, valid_to}).
UNWIND $ids AS nid
MATCH (n:Note {id: nid, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
OPTIONAL MATCH p = (n)<-[:SUPERSEDES*1..8]-(c:Note)
  WHERE all(x IN nodes(p) WHERE x.user_id = $user_id AND x.agent_id = $agent_id AND x.run_id = $run_id)
    AND all(r IN relationships(p) WHERE r.user_id = $user_id AND r.agent_id = $agent_id AND r.run_id = $run_id)
WITH n, collect(DISTINCT c) AS newer
OPTIONAL MATCH q = (n)-[:SUPERSEDES*1..8]->(o:Note)
  WHERE all(x IN nodes(q) WHERE x.user_id = $user_id AND x.agent_id = $agent_id AND x.run_id = $run_id)
    AND all(r IN relationships(q) WHERE r.user_id = $user_id AND r.agent_id = $agent_id AND r.run_id = $run_id)
WITH n, newer, collect(DISTINCT o) AS older
OPTIONAL MATCH (n)-[k:CONFLICTS_WITH]-(m:Note)
  WHERE m.user_id = $user_id AND m.agent_id = $agent_id AND m.run_id = $run_id
    AND k.user_id = $user_id AND k.agent_id = $agent_id AND k.run_id = $run_id
WITH n, newer, older, collect(DISTINCT m) AS clashes
RETURN n.id AS id, coalesce(n.event_time, n.created_at) AS since,
  reduce(m = null, t IN [(n)<-[s:SUPERSEDES]-(y:Note) WHERE y.user_id = $user_id AND y.agent_id = $agent_id AND y.run_id = $run_id
      AND s.user_id = $user_id AND s.agent_id = $agent_id AND s.run_id = $run_id | s.at] |
      CASE WHEN m IS NULL OR t < m THEN t ELSE m END) AS valid_to,
  [(n)<-[s:SUPERSEDES]-(d:Note) WHERE d.user_id = $user_id AND d.agent_id = $agent_id AND d.run_id = $run_id
    AND s.user_id = $user_id AND s.agent_id = $agent_id AND s.run_id = $run_id | d.id] AS superseded_by,
  [x IN newer | {id: x.id, content: x.content, event_time: x.event_time, event_time_text: x.event_time_text,
    created_at: x.created_at,
    valid_to: reduce(m = null, t IN [(x)<-[s:SUPERSEDES]-(y:Note) WHERE y.user_id = $user_id AND y.agent_id = $agent_id AND y.run_id = $run_id
      AND s.user_id = $user_id AND s.agent_id = $agent_id AND s.run_id = $run_id | s.at] |
      CASE WHEN m IS NULL OR t < m THEN t ELSE m END)}] AS newer,
  [x IN older | {id: x.id, content: x.content, event_time: x.event_time, event_time_text: x.event_time_text,
    created_at: x.created_at,
    valid_to: reduce(m = null, t IN [(x)<-[s:SUPERSEDES]-(y:Note) WHERE y.user_id = $user_id AND y.agent_id = $agent_id AND y.run_id = $run_id
      AND s.user_id = $user_id AND s.agent_id = $agent_id AND s.run_id = $run_id | s.at] |
      CASE WHEN m IS NULL OR t < m THEN t ELSE m END)}] AS older,
  [x IN clashes | {id: x.id, content: x.content, event_time: x.event_time, event_time_text: x.event_time_text,
    created_at: x.created_at,
    valid_to: reduce(m = null, t IN [(x)<-[s:SUPERSEDES]-(y:Note) WHERE y.user_id = $user_id AND y.agent_id = $agent_id AND y.run_id = $run_id
      AND s.user_id = $user_id AND s.agent_id = $agent_id AND s.run_id = $run_id | s.at] |
      CASE WHEN m IS NULL OR t < m THEN t ELSE m END)}] AS conflicts
