// Wait for every index to be ONLINE. Params: $seconds.
CALL db.awaitIndexes($seconds)
