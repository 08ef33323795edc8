// Research load: bare notes (id, scope, content, embedding) in one batch. Params: $rows.
UNWIND $rows AS r
CREATE (n:Note {id: r.id, user_id: r.user_id, agent_id: 'default', run_id: 'default', content: r.content})
SET n.embedding = r.embedding
