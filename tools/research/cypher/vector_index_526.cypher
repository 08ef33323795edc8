// graphmem's 5.26 vector index: no filter properties. Params: $quant, $m, $ef.
CREATE VECTOR INDEX note_embedding IF NOT EXISTS FOR (n:Note) ON n.embedding
OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine',
  `vector.quantization.enabled`: $quant, `vector.hnsw.m`: $m, `vector.hnsw.ef_construction`: $ef}}
