"""The `graphmem demo`: a small conversation written for graphmem, ingested and queried end to end."""
