// Append messages to a chat session, in order, in one transaction.
// The session node is MERGEd on its unique key (scope + session id); the SET on next_seq takes its
// write lock, so concurrent appends to one session get consecutive, non-overlapping sequence numbers.
// Params: $key, $session_id, scope, $now, $messages (list of {type, data_json}).
// Returns: first (sequence number of the first appended message), added.
MERGE (s:ChatSession {key: $key})
ON CREATE SET s.session_id = $session_id, s.user_id = $user_id, s.agent_id = $agent_id, s.run_id = $run_id,
              s.created_at = $now, s.next_seq = 0
WITH s
WHERE s.user_id = $user_id AND s.agent_id = $agent_id AND s.run_id = $run_id
SET s.next_seq = s.next_seq + size($messages), s.updated_at = $now
WITH s, s.next_seq - size($messages) AS first
UNWIND range(0, size($messages) - 1) AS i
CREATE (s)-[:HAS_MESSAGE]->(m:ChatMessage {
  session_id: $session_id, seq: first + i, type: $messages[i].type, data_json: $messages[i].data_json,
  created_at: $now, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
RETURN first, count(m) AS added
