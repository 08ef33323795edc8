// No params.
DROP INDEX note_embedding IF EXISTS
