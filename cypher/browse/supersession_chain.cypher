// Browse: the supersession chain of a note (issue 28): every note it superseded and every note that
// superseded it, along SUPERSEDES in the scope (up to 8 steps each way); the table view lists each step's
// time (r.at, the newer note's time) and reason. No note is changed by a supersession: the old notes stay.
// Params: :params {user_id: 'alice', agent_id: 'default', run_id: 'default', note_id: '<id>'}
MATCH (n:Note {id: $note_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
OPTIONAL MATCH older = (n)-[:SUPERSEDES*1..8]->(o:Note)
WHERE all(x IN nodes(older) WHERE x.user_id = $user_id AND x.agent_id = $agent_id AND x.run_id = $run_id)
OPTIONAL MATCH newer = (n)<-[:SUPERSEDES*1..8]-(c:Note)
WHERE all(x IN nodes(newer) WHERE x.user_id = $user_id AND x.agent_id = $agent_id AND x.run_id = $run_id)
RETURN n, older, newer
