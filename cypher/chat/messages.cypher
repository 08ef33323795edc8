// The last $limit messages of a chat session, oldest first (serialised with message_to_dict).
// Params: $key, scope, $limit.
MATCH (s:ChatSession {key: $key, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
      -[:HAS_MESSAGE]->(m:ChatMessage)
WITH m ORDER BY m.seq DESC LIMIT $limit
RETURN m.seq AS seq, m.data_json AS data_json
ORDER BY seq
