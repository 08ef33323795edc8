// Schema bootstrap: constraint first, then indexes. Idempotent (IF NOT EXISTS).
// Params: $analyzer - the full-text index's Lucene analyzer (graphmem.store.schema.FULLTEXT_ANALYZER).
// The vector index differs by server line: schema/vector_index_create(.2026).cypher, run after these.
// Note ids are unique per scope, not across scopes: another scope's ids can be neither refused nor
// revealed (issue 16). Databases made before hold note_id_unique on n.id: schema/scoped_ids drops it.
CREATE CONSTRAINT note_scope_id_unique IF NOT EXISTS
FOR (n:Note) REQUIRE (n.id, n.user_id, n.agent_id, n.run_id) IS UNIQUE;
CREATE CONSTRAINT note_version_uid_unique IF NOT EXISTS FOR (v:NoteVersion) REQUIRE v.uid IS UNIQUE;
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
