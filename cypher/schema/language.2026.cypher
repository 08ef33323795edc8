// The database's default Cypher language on the 2026 line ('CYPHER 5' or 'CYPHER 25'). graphmem's
// 2026 files carry the `CYPHER 25` prefix whatever it is; the base files are valid in both languages.
// Params: $database. Returns: language.
SHOW DATABASES YIELD name, defaultLanguage
WHERE name = $database
RETURN defaultLanguage AS language
LIMIT 1
