// Which scope holds a note id, if any (for idempotent add: an id is global). Params: $id.
MATCH (n:Note {id: $id})
RETURN n.user_id AS user_id, n.agent_id AS agent_id, n.run_id AS run_id
