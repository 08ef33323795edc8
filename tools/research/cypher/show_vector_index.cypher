// Everything SHOW tells about the vector index. No params.
SHOW VECTOR INDEXES YIELD name, state, populationPercent, labelsOrTypes, properties, indexProvider, options
WHERE name = 'note_embedding'
RETURN *
