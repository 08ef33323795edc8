// No params.
MATCH (n:Note) RETURN count(n) AS notes
