// The configured vector index, to check its dimensions and state before use.
// Params: $name. Returns: state, dimensions (null when the index does not exist).
SHOW VECTOR INDEXES YIELD name, state, options
WHERE name = $name
RETURN state, options.indexConfig['vector.dimensions'] AS dimensions
