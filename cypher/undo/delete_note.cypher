// Undo of an add with the note itself: delete it with its versions and every relationship (DETACH),
// counting the typed links that went with it (those other adds or people made).
// Params: $id, scope. Returns: links; no row when the note is not in the scope.
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
OPTIONAL MATCH (n)-[r:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]-(:Note)
WITH n, count(r) AS links
OPTIONAL MATCH (n)-[:PREVIOUS_VERSION]->(v:NoteVersion)
DETACH DELETE v
WITH DISTINCT n, links
DETACH DELETE n
RETURN links
