// The share of one scope's notes that contain each query word, estimated from up to $sample of them: a
// word in many of the scope's notes (a speaker's name in a conversation) carries little meaning there,
// though the index's BM25 statistics, which span every scope, may call it rare. Whole words,
// case-insensitive, over the text the full-text index holds (content, context, keywords, tags).
// $words are lowercase \w+ words (graphmem.store.fulltext.query_terms), so the pattern built from one
// holds no regex syntax; CONTAINS filters first, as it is much cheaper than a regex.
// Params: $words, $sample, scope. Returns one row per word: word, notes (sampled), containing.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n LIMIT $sample
WITH collect(toLower(coalesce(n.content, '') + ' ' + coalesce(n.context, '') + ' '
  + reduce(s = '', x IN coalesce(n.keywords, []) + coalesce(n.tags, []) | s + x + ' '))) AS texts
UNWIND $words AS word
RETURN word, size(texts) AS notes,
  size([t IN texts WHERE t CONTAINS word AND t =~ ('(?sU).*\\b' + word + '\\b.*')]) AS containing
