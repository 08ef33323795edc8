// The configured vector index, to check its dimensions, state and filter properties before use.
// Params: $name. Returns: state, dimensions, properties (the indexed property first, then the WITH
// properties on the 2026 line), provider, quantization (2026: the type; 5.26: null).
// No row when the index does not exist.
SHOW VECTOR INDEXES YIELD name, state, properties, indexProvider, options
WHERE name = $name
RETURN state, options.indexConfig['vector.dimensions'] AS dimensions, properties, indexProvider AS provider,
  options.indexConfig['vector.quantization.type'] AS quantization
