// graphmem's 5.26 index statement as a 2026 server runs it (no filter properties; Cypher 5 default).
// No params.
CREATE VECTOR INDEX note_embedding IF NOT EXISTS FOR (n:Note) ON n.embedding
OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine',
  `vector.quantization.enabled`: true, `vector.hnsw.m`: 16, `vector.hnsw.ef_construction`: 100}}
