// The per-query floor, Cypher 25. No params.
CYPHER 25 RETURN 1 AS one
