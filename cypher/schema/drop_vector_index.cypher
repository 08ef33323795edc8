// Drop the notes' vector index (the migration to the 2026 index recreates it; there is no ALTER for
// vector indexes). The notes and their embeddings stay. No params.
DROP INDEX note_embedding IF EXISTS
