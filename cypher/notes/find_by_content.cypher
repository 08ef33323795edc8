// A note of the scope with exactly this content (dedupe on request). Params: $content_sha, scope.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id, content_sha: $content_sha})
RETURN n.id AS id
ORDER BY n.created_at
LIMIT 1
