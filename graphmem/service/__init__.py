"""The service layer: ``AsyncMemoryService`` (the A-MEM algorithm, one module per step) and its
blocking facade ``MemoryService``. This package face is the core's public API for apps
(``graphmem.local``, ``graphmem.evaluation``)."""

from graphmem.models import NoteInput, SearchFilters, SearchMode
from graphmem.service.answer_context import Context, answer_prompt_digest, build_context
from graphmem.service.chat_model import OnFirstUse
from graphmem.service.grounding import sentence_refusal, sentences, speaker_of
from graphmem.service.linking.plan import LENT_KEYWORDS_MAX, lent_keywords
from graphmem.service.memory import AsyncMemoryService, Progress
from graphmem.service.sync import MemoryService
from graphmem.service.text import cosine, embed_text
from graphmem.service.updates import judge_knock_on, judge_supersession, refused_as_both_hold, same_person
from graphmem.service.wording import content_words, copies, stem, supported_share, tokens

__all__ = [
    "LENT_KEYWORDS_MAX",
    "AsyncMemoryService",
    "Context",
    "MemoryService",
    "NoteInput",
    "OnFirstUse",
    "Progress",
    "SearchFilters",
    "SearchMode",
    "answer_prompt_digest",
    "build_context",
    "content_words",
    "copies",
    "cosine",
    "embed_text",
    "judge_knock_on",
    "judge_supersession",
    "lent_keywords",
    "refused_as_both_hold",
    "same_person",
    "sentence_refusal",
    "sentences",
    "speaker_of",
    "stem",
    "supported_share",
    "tokens",
]
