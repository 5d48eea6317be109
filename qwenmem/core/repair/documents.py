"""The repair package's names for the salvage layer (qwenmem/core/salvage_documents.py): splitting a damaged text
into documents, salvaging each, picking the best. The code lives below loading so that sessions.py can salvage a
damaged file without importing repair (an import cycle before); repair modules keep importing it from here."""

from qwenmem.core.salvage_documents import (WS, WS_NUL, DocSpan, Salvaged, Split, assistant_name, pick_best,
                                            salvage_document, split_documents)

__all__ = ["WS", "WS_NUL", "DocSpan", "Salvaged", "Split", "assistant_name", "pick_best", "salvage_document",
           "split_documents"]
