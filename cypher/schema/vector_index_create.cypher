// The vector index of notes, 5.26 line (int8 scalar quantization). Idempotent (IF NOT EXISTS).
// db.index.vector.queryNodes cannot filter: scoped searches over-fetch (search/vector.cypher).
// Params: $dimensions (int) - vector size of the configured embedder (384 for all-MiniLM-L6-v2).
CREATE VECTOR INDEX note_embedding IF NOT EXISTS FOR (n:Note) ON n.embedding
OPTIONS {indexConfig: {`vector.dimensions`: toInteger($dimensions), `vector.similarity_function`: 'cosine',
  `vector.quantization.enabled`: true, `vector.hnsw.m`: 16, `vector.hnsw.ef_construction`: 100}}
