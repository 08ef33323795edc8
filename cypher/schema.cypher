// Schema bootstrap: constraint first, then indexes. Idempotent (IF NOT EXISTS).
// Params: $dimensions (int) - vector size of the configured embedder (384 for all-MiniLM-L6-v2);
// $analyzer - the full-text index's Lucene analyzer (graphmem.store.schema.FULLTEXT_ANALYZER).
CREATE CONSTRAINT note_id_unique IF NOT EXISTS FOR (n:Note) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT note_version_uid_unique IF NOT EXISTS FOR (v:NoteVersion) REQUIRE v.uid IS UNIQUE;
CREATE VECTOR INDEX note_embedding IF NOT EXISTS FOR (n:Note) ON n.embedding
OPTIONS {indexConfig: {`vector.dimensions`: toInteger($dimensions), `vector.similarity_function`: 'cosine',
  `vector.quantization.enabled`: true, `vector.hnsw.m`: 16, `vector.hnsw.ef_construction`: 100}};
CREATE FULLTEXT INDEX note_text IF NOT EXISTS FOR (n:Note) ON EACH [n.content, n.context, n.keywords, n.tags]
OPTIONS {indexConfig: {`fulltext.analyzer`: $analyzer}};
CREATE INDEX note_scope IF NOT EXISTS FOR (n:Note) ON (n.user_id, n.agent_id, n.run_id);
CREATE INDEX note_user IF NOT EXISTS FOR (n:Note) ON (n.user_id);
CREATE INDEX note_agent IF NOT EXISTS FOR (n:Note) ON (n.agent_id);
CREATE INDEX note_run IF NOT EXISTS FOR (n:Note) ON (n.run_id);
CREATE INDEX note_content_hash IF NOT EXISTS FOR (n:Note) ON (n.user_id, n.agent_id, n.run_id, n.content_sha);
CREATE INDEX note_created IF NOT EXISTS FOR (n:Note) ON (n.created_at);
CREATE INDEX note_source IF NOT EXISTS FOR (n:Note) ON (n.user_id, n.agent_id, n.run_id, n.source_id);
CREATE CONSTRAINT store_item_uid_unique IF NOT EXISTS FOR (i:StoreItem) REQUIRE i.uid IS UNIQUE;
CREATE INDEX store_item_ns IF NOT EXISTS FOR (i:StoreItem) ON (i.user_id, i.agent_id, i.run_id, i.ns_key);
CREATE INDEX store_item_ns_any_scope IF NOT EXISTS FOR (i:StoreItem) ON (i.ns_key);
CREATE INDEX store_item_expiry IF NOT EXISTS FOR (i:StoreItem) ON (i.expires_at);
// Undo of an add finds the versions its evolutions left by cause, without a scan of every version.
CREATE INDEX note_version_cause IF NOT EXISTS FOR (v:NoteVersion) ON (v.user_id, v.agent_id, v.run_id, v.changed_by);
