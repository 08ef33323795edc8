// The vector index of notes, 2026 line: the scope properties declared (WITH) so that SEARCH filters
// by scope inside the index (search/vector.2026.cypher). Quantization spelt out: BINARY with search
// expansion 3 is 2026.08.1's default and, with SEARCH's LIMIT 3 x k, gives recall@10 >= 0.99 on text
// embeddings (docs/neo4j-2026.md); naming it keeps a future default change from changing recall.
// IF NOT EXISTS keeps an older index of the same name silently: the bootstrap reads SHOW VECTOR
// INDEXES first and refuses (or migrates) a 5.26-style one. Cypher 25 (WITH and these options).
// Params: $dimensions (int).
CYPHER 25
CREATE VECTOR INDEX note_embedding IF NOT EXISTS FOR (n:Note) ON n.embedding
WITH [n.user_id, n.agent_id, n.run_id]
OPTIONS {indexConfig: {`vector.dimensions`: toInteger($dimensions), `vector.similarity_function`: 'cosine',
  `vector.quantization.type`: 'BINARY', `vector.default_search_expansion_factor`: 3.0,
  `vector.hnsw.m`: 16, `vector.hnsw.ef_construction`: 100}}
