// The share of one scope's notes that contain each query word, estimated from up to $sample of them: a
// word in many of the scope's notes (a speaker's name in a conversation) carries little meaning there,
// though the index's BM25 statistics, which span every scope, may call it rare. Whole words,
// case-insensitive, over the fields the search reads ($fields: some of content, context, keywords, tags).
// $words are lowercase \w+ words (graphmem.store.fulltext.query_terms), so the pattern built from one
// holds no regex syntax; CONTAINS filters first, as it is much cheaper than a regex.
// Params: $words, $fields, $sample, scope. Returns one row per word: word, notes (sampled), containing.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n LIMIT $sample
WITH collect(toLower(
  CASE WHEN 'content' IN $fields THEN coalesce(n.content, '') ELSE '' END + ' '
  + CASE WHEN 'context' IN $fields THEN coalesce(n.context, '') ELSE '' END + ' '
  + reduce(s = '', x IN CASE WHEN 'keywords' IN $fields THEN coalesce(n.keywords, []) ELSE [] END
    + CASE WHEN 'tags' IN $fields THEN coalesce(n.tags, []) ELSE [] END | s + x + ' '))) AS texts
UNWIND $words AS word
RETURN word, size(texts) AS notes,
  size([t IN texts WHERE t CONTAINS word AND t =~ ('(?sU).*\\b' + word + '\\b.*')]) AS containing
