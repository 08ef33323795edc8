// Params: $batch.
MATCH (n:Note) WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS deleted
