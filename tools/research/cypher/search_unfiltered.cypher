// 2026: SEARCH without a filter (the floor of an index query). Params: $embedding, $k.
CYPHER 25
MATCH (n:Note)
  SEARCH n IN (VECTOR INDEX note_embedding FOR $embedding LIMIT $k) SCORE AS score
RETURN n.id AS id, score
