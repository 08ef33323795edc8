// The full-text index's analyzer, to rebuild an index made with another one.
// Params: $name. Returns: analyzer, state (no row when the index does not exist).
SHOW FULLTEXT INDEXES YIELD name, state, options
WHERE name = $name
RETURN options.indexConfig['fulltext.analyzer'] AS analyzer, state
