"""One session model for every QwenPaw generation, with a reader and a writer per generation.

Layers (each imports only the ones above it; tests/project/test_qwenpaw2_architecture.py enforces it):

  codec.py   bytes <-> JSON document, exactly as QwenPaw serialises (imports nothing from qwenmem)
  model.py   the generation-neutral view: Session, Message, Block (imports nothing from qwenmem)
  gen1_doc.py  the raw 1.x document (SessionDoc, Entry) and its message helpers (imports nothing from qwenmem)
  gen1.py    CoPaw / QwenPaw 1.x `agent.memory` reader and writer
  gen2.py    QwenPaw 2.x `agent.state` reader and writer (AgentScope 2.0 Msg dicts, scroll, mode_state)
  detect.py  which generation a document / a workspace is (spec qwenpaw2-workspace.md §7.2)

Above this package: salvage of damaged 1.x text (core/salvage_documents.py, core/recovery.py), then loading
(core/sessions.py), then repair (core/repair/), which depends on loading and never the reverse.

A `Session` is a *view* over the raw JSON document: the document is never rebuilt from the model, so every key
(known or not) survives and `codec.dumps_document(session.doc)` gives the original bytes back for a file QwenPaw
wrote. Writers change the document in place (gen1.set_messages / gen2.set_messages) and then re-read it.

Only this package knows the documents' key paths (tests/project/test_session_key_paths.py): other modules read and
change them through gen2's accessors (`agent_of`, `state_of`, `context_of`, `scroll_of`, `set_context`,
`ensure_scroll`, `ensure_mode_state`, `new_document`, …) and gen1_doc's (`agent_value`, `memory_value`,
`holds_conversation`, `document_of_content`, `new_document`, `strict_load_problems`, …), which return what is written
there whatever its JSON type, so each caller keeps its own verdict. Every production write of a session serialises
it with its generation's writer, `gen1.encode` / `gen2.encode` (QwenPaw's one recipe, codec.encode_document), and
publishes the bytes through fsio's atomic writer.

Using it (repair and compaction of 2.x, issues 14/15):
  * `sessions.load_session(ref)` reads either generation; `loaded.generation` is "1.x" / "2.x" / None,
    `loaded.gen2_doc` the raw 2.x document, `loaded.as_model()` the Session (built on first use).
  * `Message.raw` is the dict in the file (2.x: the Msg; 1.x: the [msg, marks] item), `Block.raw` the block:
    edit those, then `gen2.set_messages(session, [m.raw for m in keep])` and `gen2.encode(session.doc)`.
  * `Message.synthetic` marks the scroll placeholder (keep its id in scroll.synthetic_ids if it is kept);
    `Message.seq/seq_hi` link a live message to its history.db rows (scroll.seq_by_id).
  * `Message.to_json()` is the normalised shape `sessions show --json` prints for files and history rows alike.
  * history.db: `qwenmem.core.history` (read-only reader, rows → messages, full record, state for doctor).
"""

from qwenmem.core.session_model.codec import dumps_document, encode_document, loads_document
from qwenmem.core.session_model.detect import (GEN1, GEN2, classify_document, read_document)
from qwenmem.core.session_model.model import Block, Message, ScrollState, Session

__all__ = ["Block", "Message", "ScrollState", "Session", "GEN1", "GEN2", "classify_document", "read_document",
           "dumps_document", "encode_document", "loads_document"]
