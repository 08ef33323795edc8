// The scope range index graphmem's schema has (the exact scan and the post-filter use it). No params.
CREATE INDEX note_scope IF NOT EXISTS FOR (n:Note) ON (n.user_id, n.agent_id, n.run_id)
