// The demo's notes and their typed links (`graphmem demo` prints the run id to set).
// :param user_id => 'demo'   :param run_id => 'run-...'
MATCH (n:Note {user_id: $user_id, agent_id: 'demo', run_id: $run_id})
OPTIONAL MATCH p = (n)-[r:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]->(:Note)
RETURN n, p
