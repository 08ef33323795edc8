// Undo of an add, the part of issue 28: the SUPERSEDES, CONFLICTS_WITH and DERIVED_FROM relationships the
// add of a note (or of a synthesis note) recorded (caused_by = the note), both ends in the scope. Deleting
// them is all: search and ask read a note's validity from these relationships, so the notes it superseded
// are current again. No note changes.
// Params: $note_id, scope, $dry_run (count only). Returns one row: removed.
MATCH (n:Note {id: $note_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})-[r]-(m:Note)
WHERE (type(r) = 'SUPERSEDES' OR type(r) = 'CONFLICTS_WITH' OR type(r) = 'DERIVED_FROM') AND r.caused_by = $note_id
  AND m.user_id = $user_id AND m.agent_id = $agent_id AND m.run_id = $run_id
  AND r.user_id = $user_id AND r.agent_id = $agent_id AND r.run_id = $run_id
WITH collect(DISTINCT r) AS found
FOREACH (r IN CASE WHEN $dry_run THEN [] ELSE found END | DELETE r)
RETURN size(found) AS removed
