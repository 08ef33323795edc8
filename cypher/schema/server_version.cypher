// Server name, version and edition, for start-up checks. No params.
CALL dbms.components() YIELD name, versions, edition
RETURN name, versions[0] AS version, edition
