// Liveness and size, for health endpoints. No params.
MATCH (n:Note) RETURN count(n) AS notes
