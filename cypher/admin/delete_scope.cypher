// Delete everything of one scope: notes, note versions, chat sessions and messages, LangGraph store
// items, with their relationships (tests, admin). One indexed lookup per label instead of a scan of all nodes.
// Params: $user_id, $agent_id, $run_id. Returns: deleted (count).
CALL () {
  MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id}) DETACH DELETE n RETURN count(*) AS a
}
CALL () {
  MATCH (n:NoteVersion {user_id: $user_id, agent_id: $agent_id, run_id: $run_id}) DETACH DELETE n RETURN count(*) AS b
}
CALL () {
  MATCH (n:ChatMessage {user_id: $user_id, agent_id: $agent_id, run_id: $run_id}) DETACH DELETE n RETURN count(*) AS c
}
CALL () {
  MATCH (n:ChatSession {user_id: $user_id, agent_id: $agent_id, run_id: $run_id}) DETACH DELETE n RETURN count(*) AS d
}
CALL () {
  MATCH (n:StoreItem {user_id: $user_id, agent_id: $agent_id, run_id: $run_id}) DETACH DELETE n RETURN count(*) AS e
}
RETURN a + b + c + d + e AS deleted
