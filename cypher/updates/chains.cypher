// The supersession chains of a scope (issue 28, consolidation): every current note (no note of the scope
// supersedes it) that supersedes others, with every note along SUPERSEDES behind it (up to 8 steps), each
// with its time and its validity end. Both ends and every relationship of a chain are in the scope.
// Params: scope, $limit. Returns one row per chain: head {id, content, since}, older (list of {id,
// content, since, until}).
MATCH (h:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})-[first:SUPERSEDES]->(:Note)
WHERE first.user_id = $user_id AND first.agent_id = $agent_id AND first.run_id = $run_id
  AND NOT exists {
    MATCH (h)<-[s:SUPERSEDES]-(x:Note)
    WHERE x.user_id = $user_id AND x.agent_id = $agent_id AND x.run_id = $run_id
      AND s.user_id = $user_id AND s.agent_id = $agent_id AND s.run_id = $run_id
  }
WITH DISTINCT h
OPTIONAL MATCH p = (h)-[:SUPERSEDES*1..8]->(o:Note)
  WHERE all(x IN nodes(p) WHERE x.user_id = $user_id AND x.agent_id = $agent_id AND x.run_id = $run_id)
    AND all(r IN relationships(p) WHERE r.user_id = $user_id AND r.agent_id = $agent_id AND r.run_id = $run_id)
WITH h, collect(DISTINCT o) AS older
WHERE size(older) > 0
RETURN {id: h.id, content: h.content, since: coalesce(h.event_time, h.created_at)} AS head,
  [x IN older | {id: x.id, content: x.content, since: coalesce(x.event_time, x.created_at),
    until: reduce(m = null, t IN [(x)<-[s:SUPERSEDES]-(y:Note) WHERE y.user_id = $user_id
      AND y.agent_id = $agent_id AND y.run_id = $run_id
      AND s.user_id = $user_id AND s.agent_id = $agent_id AND s.run_id = $run_id | s.at] |
      CASE WHEN m IS NULL OR t < m THEN t ELSE m END)}] AS older
ORDER BY head.since, head.id
LIMIT $limit
