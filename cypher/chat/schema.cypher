// Schema for chat message histories (graphmem.integrations.langchain.GraphmemChatMessageHistory).
// Idempotent; run once by graphmem/store/history_store.py before the first history query. No params.
CREATE CONSTRAINT chat_session_key_unique IF NOT EXISTS FOR (s:ChatSession) REQUIRE s.key IS UNIQUE;
CREATE INDEX chat_session_scope IF NOT EXISTS FOR (s:ChatSession) ON (s.user_id, s.agent_id, s.run_id);
CREATE INDEX chat_message_scope IF NOT EXISTS FOR (m:ChatMessage) ON (m.user_id, m.agent_id, m.run_id, m.session_id);
