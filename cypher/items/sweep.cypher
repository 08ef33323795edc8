// The TTL sweeper: delete up to $batch store items whose TTL expired before $now, in every scope
// (maintenance: it reads and returns nothing but a count). Params: $now, $batch.
// Returns: deleted (count).
MATCH (i:StoreItem)
WHERE i.expires_at < $now
WITH i LIMIT $batch
DETACH DELETE i
RETURN count(*) AS deleted
