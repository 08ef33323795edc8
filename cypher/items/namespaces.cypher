// Distinct namespaces of a scope's store items, optionally cut to $max_depth labels, matching a
// prefix and a suffix where '*' stands for any one label; sorted, paged.
// $ns_key: the encoding of the prefix's leading labels up to its first '*' (an index-friendly start).
// Params: scope, $ns_key, $prefix, $suffix (lists, may be empty), $max_depth (nullable), $live_at
// (nullable), $skip, $limit.
MATCH (i:StoreItem {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE i.ns_key STARTS WITH $ns_key
  AND size(i.ns) >= size($prefix) AND size(i.ns) >= size($suffix)
  AND all(j IN range(0, size($prefix) - 1) WHERE $prefix[j] = '*' OR i.ns[j] = $prefix[j])
  AND all(j IN range(0, size($suffix) - 1)
          WHERE $suffix[j] = '*' OR i.ns[size(i.ns) - size($suffix) + j] = $suffix[j])
  AND ($live_at IS NULL OR i.expires_at IS NULL OR i.expires_at > $live_at)
WITH DISTINCT CASE WHEN $max_depth IS NULL THEN i.ns ELSE i.ns[0..$max_depth] END AS ns
RETURN ns
ORDER BY ns
SKIP $skip LIMIT $limit
