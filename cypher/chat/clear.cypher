// Delete a chat session and all its messages. Params: $key, scope. Returns: deleted (messages removed).
MATCH (s:ChatSession {key: $key, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
OPTIONAL MATCH (s)-[:HAS_MESSAGE]->(m:ChatMessage)
WITH s, collect(m) AS messages
FOREACH (m IN messages | DETACH DELETE m)
DETACH DELETE s
RETURN size(messages) AS deleted
