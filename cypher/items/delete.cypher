// Delete store items of one scope by uid (see items/put.cypher). Params: $uids, scope.
// Returns: deleted (count).
UNWIND $uids AS uid
MATCH (i:StoreItem {uid: uid, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
DETACH DELETE i
RETURN count(*) AS deleted
