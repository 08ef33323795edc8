// The per-query floor. No params.
RETURN 1 AS one
