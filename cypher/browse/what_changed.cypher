// Browse: what changed for a person (issue 28). Every supersession and conflict among the scope's notes
// that mention a name (case-insensitive, e.g. the speaker), oldest change first: the newer note, the
// SUPERSEDES (or CONFLICTS_WITH) relationship with its time and reason, the note it replaced.
// Params: :params {user_id: 'alice', agent_id: 'default', run_id: 'default', name: 'Maya'}
MATCH change = (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
               -[r]->(o:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE (type(r) = 'SUPERSEDES' OR type(r) = 'CONFLICTS_WITH')
  AND (toLower(n.content) CONTAINS toLower($name) OR toLower(o.content) CONTAINS toLower($name))
RETURN change
ORDER BY r.at
