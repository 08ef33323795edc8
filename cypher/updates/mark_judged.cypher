// The supersession step has judged this note against the notes before it (issue 28): a resumed ingest
// judges again only the notes its interrupted run stored but never judged (`updates/unjudged`). No
// other property changes. Params: $note_id, scope, $now. Returns one row when the note was found.
MATCH (n:Note {id: $note_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
SET n.updates_judged_at = $now
RETURN n.id AS id
