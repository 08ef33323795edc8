// Params: $seconds.
CALL db.awaitIndexes($seconds)
