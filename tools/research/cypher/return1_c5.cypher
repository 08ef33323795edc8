// The per-query floor, Cypher 5. No params.
CYPHER 5 RETURN 1 AS one
