// The database's default Cypher language. 5.26 knows only Cypher 5 (`CYPHER 25` is an error there)
// and SHOW DATABASES has no defaultLanguage column, so the 5.26 line answers without asking.
// Params: $database (unused on 5.26, named for the 2026 file's sake). Returns: language.
WITH $database AS unused
RETURN 'CYPHER 5' AS language
