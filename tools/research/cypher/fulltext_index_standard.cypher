// A second full-text index over n.content (an index on the same properties as note_text is refused as equivalent) with the 'standard' analyzer (no stemming), to
// compare analyzers on the same notes. Drop it afterwards: DROP INDEX note_text_standard.
CREATE FULLTEXT INDEX note_text_standard IF NOT EXISTS FOR (n:Note) ON EACH [n.content]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'standard'}}
