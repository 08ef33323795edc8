"""Domain models, one module per vocabulary. Every name is re-exported here, so
``from graphmem.models import X`` stays the one import. No I/O in any of them.

- ``validation.py``  ids, bounds (``LIMITS``: every bound on a number or size a client sends),
                     content and label checks, time
- ``notes.py``       the core domain: LinkType (+ meaning), SearchMode, Scope, Note, Link, NoteVersion
- ``results.py``     what the service answers: SearchHit, Usage, AddResult, AskResult
- ``ingest.py``      requests (NoteInput, SearchFilters) and the agentic ingest's report
- ``writes.py``      the steps of an add and what the service hands the note store
- ``versions.py``    history diffs, rollback, undo of an add, and their store DTOs
- ``chat.py``        chat histories' store DTOs
- ``items.py``       store items (the LangGraph store's data)
"""

from graphmem.models.chat import (
    SessionInfo,
    StoredMessage,
)
from graphmem.models.ingest import (
    IngestItem,
    IngestReport,
    IngestStatus,
    NoteInput,
    SearchFilters,
)
from graphmem.models.items import (
    ITEM_OPERATORS,
    ItemFilter,
    ItemOperator,
    ItemRecord,
    ItemWrite,
    LeafCondition,
    StoredItem,
)
from graphmem.models.notes import (
    _LINK_MEANINGS as _LINK_MEANINGS,
)
from graphmem.models.notes import (
    FOLLOWS_REASON,
    MANUAL_CAUSE,
    EnrichmentStatus,
    HitSource,
    Link,
    LinkType,
    Note,
    NoteVersion,
    Scope,
    SearchMode,
)
from graphmem.models.results import (
    AddResult,
    AskResult,
    LinkedVia,
    NeighbourChange,
    SearchHit,
    Usage,
)
from graphmem.models.validation import (
    _ID_RE as _ID_RE,
)
from graphmem.models.validation import (
    CONTROL_CHARS,
    ID_PATTERN,
    LIMITS,
    MAX_SESSION_ID_CHARS,
    Limits,
    check_bound,
    check_id,
    check_session_id,
    iso,
    new_note_id,
    utcnow,
    validate_content,
    validate_label,
)
from graphmem.models.versions import (
    ROLLBACK_CAUSE,
    UNDO_CAUSE,
    VERSIONED_FIELDS,
    AddEffects,
    ChangeKind,
    EvolutionTrace,
    FieldDiff,
    NeighbourRevert,
    NoteState,
    Restore,
    RollbackResult,
    TextOp,
    UndoOutcome,
    UndoResult,
    UndoStatus,
    UndoWrite,
    VersionDiff,
    VersionedField,
    describe_change,
    is_change_label,
)
from graphmem.models.writes import (
    AddOutcome,
    AddWrite,
    ConstructedNote,
    EvolutionPlan,
    LinkedNote,
    NeighbourEvolution,
    NeighbourUpdate,
    TextMatch,
)

__all__ = [
    "CONTROL_CHARS",
    "FOLLOWS_REASON",
    "ID_PATTERN",
    "ITEM_OPERATORS",
    "LIMITS",
    "MANUAL_CAUSE",
    "MAX_SESSION_ID_CHARS",
    "ROLLBACK_CAUSE",
    "UNDO_CAUSE",
    "VERSIONED_FIELDS",
    "AddEffects",
    "AddOutcome",
    "AddResult",
    "AddWrite",
    "AskResult",
    "ChangeKind",
    "ConstructedNote",
    "EnrichmentStatus",
    "EvolutionPlan",
    "EvolutionTrace",
    "FieldDiff",
    "HitSource",
    "IngestItem",
    "IngestReport",
    "IngestStatus",
    "ItemFilter",
    "ItemOperator",
    "ItemRecord",
    "ItemWrite",
    "LeafCondition",
    "Limits",
    "Link",
    "LinkType",
    "LinkedNote",
    "LinkedVia",
    "NeighbourChange",
    "NeighbourEvolution",
    "NeighbourRevert",
    "NeighbourUpdate",
    "Note",
    "NoteInput",
    "NoteState",
    "NoteVersion",
    "Restore",
    "RollbackResult",
    "Scope",
    "SearchFilters",
    "SearchHit",
    "SearchMode",
    "SessionInfo",
    "StoredItem",
    "StoredMessage",
    "TextMatch",
    "TextOp",
    "UndoOutcome",
    "UndoResult",
    "UndoStatus",
    "UndoWrite",
    "Usage",
    "VersionDiff",
    "VersionedField",
    "check_bound",
    "check_id",
    "check_session_id",
    "describe_change",
    "is_change_label",
    "iso",
    "new_note_id",
    "utcnow",
    "validate_content",
    "validate_label",
]
