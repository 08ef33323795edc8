// The 2026 vector index: the scope properties declared for in-index filtering.
// 2026.08.1 maps `vector.quantization.enabled: true` (and no quantization option at all) to
// type BINARY with `vector.default_search_expansion_factor` 3.0; both are set explicitly here.
// Params: $quant_type ('NONE', 'SCALAR', 'BINARY'), $expansion, $m, $ef.
CYPHER 25
CREATE VECTOR INDEX note_embedding IF NOT EXISTS FOR (n:Note) ON n.embedding
WITH [n.user_id, n.agent_id, n.run_id]
OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine',
  `vector.quantization.type`: $quant_type, `vector.default_search_expansion_factor`: $expansion,
  `vector.hnsw.m`: $m, `vector.hnsw.ef_construction`: $ef}}
