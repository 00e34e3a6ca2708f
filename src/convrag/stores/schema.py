"""The relational schema: an append-only list of migrations, run in order by
:meth:`~convrag.stores.database.Database.setup`. Never edit a migration that has shipped;
append a new one.
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    """CREATE TABLE IF NOT EXISTS convrag_migrations (v INTEGER PRIMARY KEY)""",
    """CREATE TABLE workspaces (
        id TEXT PRIMARY KEY,
        index_version BIGINT NOT NULL DEFAULT 0,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    """CREATE TABLE api_keys (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        key_hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        revoked_at TIMESTAMPTZ
    )""",
    """CREATE TABLE documents (
        id UUID PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        source TEXT NOT NULL,
        title TEXT,
        content_hash TEXT NOT NULL,
        metadata JSONB NOT NULL DEFAULT '{}'::jsonb,
        status TEXT NOT NULL DEFAULT 'ready',
        error TEXT,
        n_chunks INTEGER NOT NULL DEFAULT 0,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (workspace_id, source)
    )""",
    """CREATE TABLE chunks (
        id UUID PRIMARY KEY,
        workspace_id TEXT NOT NULL,
        document_id UUID NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        text TEXT NOT NULL,
        metadata JSONB NOT NULL DEFAULT '{}'::jsonb
    )""",
    """CREATE INDEX chunks_ws_doc ON chunks (workspace_id, document_id, position)""",
    """CREATE TABLE conversations (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        user_email VARCHAR(255),
        started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        last_activity_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        metadata JSONB NOT NULL DEFAULT '{}'::jsonb
    )""",
    """CREATE INDEX conversations_ws_activity
        ON conversations (workspace_id, last_activity_at DESC)""",
    """CREATE TABLE conversation_turns (
        id UUID PRIMARY KEY,
        workspace_id TEXT NOT NULL,
        conversation_id UUID NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        turn_number INTEGER NOT NULL,
        question TEXT NOT NULL,
        answer TEXT NOT NULL,
        contextualized_query TEXT,
        entities_mentioned TEXT[] NOT NULL DEFAULT '{}',
        intent VARCHAR(50),
        confidence FLOAT,
        sources JSONB NOT NULL DEFAULT '[]'::jsonb,
        web_search_triggered BOOLEAN NOT NULL DEFAULT FALSE,
        repetition_detected BOOLEAN NOT NULL DEFAULT FALSE,
        metadata JSONB NOT NULL DEFAULT '{}'::jsonb,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        UNIQUE (conversation_id, turn_number)
    )""",
    """CREATE INDEX turns_created ON conversation_turns (created_at DESC)""",
    """CREATE TABLE message_citations (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        workspace_id TEXT NOT NULL,
        message_id UUID NOT NULL REFERENCES conversation_turns(id) ON DELETE CASCADE,
        citation_marker VARCHAR(10) NOT NULL,
        position_in_response INT,
        source_type VARCHAR(50) NOT NULL,
        source_id UUID NOT NULL,
        relevance_score FLOAT,
        content_snippet TEXT,
        source_url TEXT,
        document_id UUID,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    """CREATE INDEX idx_citations_message ON message_citations (message_id)""",
    """CREATE INDEX idx_citations_source ON message_citations (source_type, source_id)""",
    # float32 bytes of the chunk's vector, for in-process dense search on Milvus Lite:
    # reloading 100k vectors from here takes about a second, from Lite about a minute.
    """ALTER TABLE chunks ADD COLUMN embedding BYTEA""",
    # The PDF page a citation points at (chunks keep theirs in metadata->'page'): stored
    # with the citation, it stays right after the document is re-ingested or deleted.
    """ALTER TABLE message_citations ADD COLUMN page INTEGER""",
    # A name the user gave the conversation; NULL lists it under its first question.
    """ALTER TABLE conversations ADD COLUMN title TEXT""",
    # One rating per answer: a new one replaces the old (the primary key is the turn).
    """CREATE TABLE message_feedback (
        message_id UUID PRIMARY KEY REFERENCES conversation_turns(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        rating TEXT NOT NULL CHECK (rating IN ('up', 'down')),
        comment TEXT,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    # Durable turns: a turn's row is written when it starts ('processing'), completed by
    # persist ('done') or marked 'failed' with a short reason in ``error``. Rows that were
    # written before this migration are all answered turns, hence the default 'done'.
    # ``updated_at`` is when the status last changed (restart recovery reads its age);
    # ``idempotency_key`` is the client's key of a retried message, if it sent one.
    """ALTER TABLE conversation_turns
        ADD COLUMN status TEXT NOT NULL DEFAULT 'done'
            CHECK (status IN ('processing', 'done', 'failed')),
        ADD COLUMN error TEXT,
        ADD COLUMN updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        ADD COLUMN idempotency_key TEXT""",
    # One turn per client key in a conversation (the turn id is derived from the key too,
    # so the primary key already refuses a second row; this says so in the schema).
    """CREATE UNIQUE INDEX turns_idempotency_key ON conversation_turns
        (conversation_id, idempotency_key) WHERE idempotency_key IS NOT NULL""",
    # Restart recovery looks for unfinished turns; they are few, so a partial index.
    """CREATE INDEX turns_processing ON conversation_turns (updated_at)
        WHERE status = 'processing'""",
    # Ingest progress: while a document is processing, ``n_chunks`` counts the chunks
    # embedded so far and ``chunks_total`` how many it has.
    """ALTER TABLE documents ADD COLUMN chunks_total INTEGER NOT NULL DEFAULT 0""",
    # The request rate limit's token bucket per API key (by hash), shared by every worker.
    # UNLOGGED: a bucket lost in a crash only refills early, and its writes skip the WAL.
    """CREATE UNLOGGED TABLE rate_limits (
        key_hash TEXT PRIMARY KEY,
        tokens DOUBLE PRECISION NOT NULL,
        passed BOOLEAN NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
    )""",
    # The embedding model a workspace's vectors were made with (NULL: not recorded yet;
    # the next ingest records its own). Vectors of two models cannot be compared.
    """ALTER TABLE workspaces ADD COLUMN embedding_model TEXT""",
    # An upload's saved file, so that an ingest a shutdown interrupted (``interrupted``)
    # is taken up again when the service starts.
    """ALTER TABLE documents ADD COLUMN upload_path TEXT""",
    """ALTER TABLE documents ADD COLUMN interrupted BOOLEAN NOT NULL DEFAULT false""",
    # The process answering a ``processing`` turn: the key of the advisory lock it holds
    # while it lives (see ``Database.owner``). NULL for turns from before the column.
    """ALTER TABLE conversation_turns ADD COLUMN owner INTEGER""",
    # The checkpoint threads a conversation was answered under when their id is not the
    # conversation's own (a thread named "my-chat" stores its turns under that name's
    # UUID5), so that deleting the conversation deletes their checkpoints too.
    """CREATE TABLE conversation_threads (
        conversation_id UUID NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        thread_id TEXT NOT NULL,
        PRIMARY KEY (conversation_id, thread_id)
    )""",
    # A run's checkpointer looks up whose conversations a thread holds before it loads
    # the thread (``stores.checkpoints``): by thread, not by conversation.
    """CREATE INDEX conversation_threads_thread ON conversation_threads (thread_id)""",
    # A conversation's delete under way, for every process sharing the database: set
    # (with the deleting process's liveness key, see ``owner``) before its vectors and
    # checkpoints are cleared, so that no turn starts in it meanwhile. A mark whose
    # process is gone, or older than ``DELETE_MARK_S``, no longer counts.
    """ALTER TABLE conversations
        ADD COLUMN deleting_since TIMESTAMPTZ,
        ADD COLUMN deleting_owner INTEGER""",
    # The chats of the OpenAI-compatible endpoint, whose clients resend the whole history
    # with each request: the hash of a chat's messages up to each answer stored in a
    # conversation, so that the next request, whose earlier messages are those, continues
    # that conversation (one indexed lookup). Gone with the conversation.
    """CREATE TABLE conversation_transcripts (
        workspace_id TEXT NOT NULL,
        transcript_hash TEXT NOT NULL,
        conversation_id UUID NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, transcript_hash, conversation_id)
    )""",
    # A conversation's delete finds its transcripts by conversation (the foreign key).
    """CREATE INDEX conversation_transcripts_conversation
        ON conversation_transcripts (conversation_id)""",
    # The vectors an upload's ingest has embedded so far, a slice at a time, kept until
    # its document is stored: an ingest a restart stopped embeds only what is missing.
    # Keyed by a hash of the model and of the text embedded, so a row is only ever reused
    # for the same input to the same model.
    """CREATE TABLE ingest_vectors (
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        document_id UUID NOT NULL,
        input_hash TEXT NOT NULL,
        embedding BYTEA NOT NULL,
        PRIMARY KEY (document_id, input_hash)
    )""",
    # An upload's ingest pace: when its embedding began (its first progress report), how
    # many chunks were embedded then (a resumed ingest starts past 0), and its latest
    # progress (the end, once ready). NULL: no upload ingest recorded (a CLI ingest).
    """ALTER TABLE documents
        ADD COLUMN progress_started_at TIMESTAMPTZ,
        ADD COLUMN progress_started_chunks INTEGER NOT NULL DEFAULT 0,
        ADD COLUMN progress_at TIMESTAMPTZ""",
    # The liveness key of the process ingesting a ``processing`` document (see
    # ``Database.owner``): at a start, one whose process is gone (killed mid-ingest) is
    # taken up again from its saved file instead of waiting to be called failed. NULL for
    # documents from before the column, and for those no process holds.
    """ALTER TABLE documents ADD COLUMN owner INTEGER""",
    # Uploaded files kept as their documents' originals, shared by every process on the
    # database (``stores.originals``): a document names its original by id in
    # ``upload_path``; the bytes are parts of at most 1 MiB, written and read one at a
    # time. Gone with their workspace. Files an older version kept in a data directory
    # are moved in at that directory's next start (``OriginalStore.adopt_files``).
    """CREATE TABLE originals (
        id UUID PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        filename TEXT NOT NULL,
        size BIGINT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    """CREATE TABLE original_parts (
        original_id UUID NOT NULL REFERENCES originals(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        data BYTEA NOT NULL,
        PRIMARY KEY (original_id, seq)
    )""",
    # Parts stored as they are, not compressed: pglz took 0.4 s more of each 10 MiB text
    # upload's answer (0.7 s against 0.3 s) to keep a fifth of its size; PDFs and Office
    # files are compressed already.
    """ALTER TABLE original_parts ALTER COLUMN data SET STORAGE EXTERNAL""",
    # Whether a document still names an original (before it is deleted) is looked up by
    # workspace and key.
    """CREATE INDEX documents_upload ON documents (workspace_id, upload_path)
        WHERE upload_path IS NOT NULL""",
]
