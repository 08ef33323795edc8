// Drop the full-text index so that schema.cypher creates it again with the analyzer it declares
// (an index's analyzer cannot be changed in place). No params.
DROP INDEX note_text IF EXISTS
