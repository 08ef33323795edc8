// Migration (issue 16): note ids were unique across all scopes (note_id_unique on n.id), so an add
// with another scope's id was refused: an existence oracle between tenants. They are unique per scope
// now (note_scope_id_unique in schema.cypher, created before this runs; it holds wherever the old one
// held, so the notes need no change). Run by the bootstrap after schema.cypher; idempotent. No params.
DROP CONSTRAINT note_id_unique IF EXISTS
