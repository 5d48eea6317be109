"""Near-duplicates by meaning, with a real sentence-transformers model (all-MiniLM-L6-v2, loaded from disk)."""

from __future__ import annotations

import pytest

from dream_embedder import MiniLMEmbedder
from qwenmem.core.dream.consolidate import consolidate
from qwenmem.core.dream.run import DreamOptions, dream
from qwenmem.core.settings import load_settings
from qwenmem.core.workspace import discover_workspace


@pytest.fixture(scope="module")
def embedder():
    return MiniLMEmbedder()


MEMORY = """# Memory

## Infrastructure
- Behind pgbouncer, staging Postgres runs on 10.0.3.7:5432.
- The deploy uses GitHub Actions.
- The staging Postgres runs on 10.0.3.7:5432, behind pgbouncer, since the March outage.
- Alice owns the billing service.
- Alice's manager owns the billing service.

## Limits
- The connection pool limit of the production database is 100.
- The production database connection pool limit is 200.

## Travel
- Berlin trip booked for 12-16 June, hotel near Alexanderplatz.
"""


def test_paraphrase_is_removed_and_the_more_detailed_entry_stays(embedder):
    out = consolidate(MEMORY, None, "2026-01-01", embedder, threshold=0.9)
    assert "- Behind pgbouncer, staging Postgres runs on 10.0.3.7:5432.\n" not in out.text
    assert "- The staging Postgres runs on 10.0.3.7:5432, behind pgbouncer, since the March outage.\n" in out.text
    removed = [c for c in out.changes if c.action == "removed"]
    assert len(removed) == 1 and removed[0].similarity >= 0.9 and "near-duplicate" in removed[0].reason
    assert "GitHub Actions" in out.text and "Berlin trip" in out.text


def test_a_high_cosine_without_every_clause_word_for_word_removes_nothing(embedder):
    """Every word of the first is in the second, and the model scores them as near-identical: still two facts."""
    out = consolidate(MEMORY, None, "2026-01-01", embedder, threshold=0.8)
    assert "- Alice owns the billing service.\n" in out.text and "- Alice's manager owns the billing service.\n" in out.text


def test_similar_entries_with_different_numbers_are_flagged_not_removed(embedder):
    out = consolidate(MEMORY, None, "2026-01-01", embedder, threshold=0.9)
    assert "is 100." in out.text and "is 200." in out.text
    assert len(out.flagged) == 1 and "values differ" in out.flagged[0].reason


def test_threshold_is_honoured(embedder):
    strict = consolidate(MEMORY, None, "2026-01-01", embedder, threshold=0.99)
    assert strict.text == MEMORY and not strict.flagged


def test_log_restatement_is_not_promoted_and_changed_value_replaces(embedder):
    log = ("# day\n\n## Facts\n- For work, the user prefers short answers in English.\n"
           "- The maximum size of the production database connection pool is now 300.\n")
    memory = "# M\n\n## Prefs\n- The user prefers short answers in English for work.\n\n## DB\n" \
             "- Production database connection pool maximum size: 100.\n"
    out = consolidate(memory, log, "2026-01-02", embedder, threshold=0.85)
    assert "For work, the user" not in out.text
    assert "- The maximum size of the production database connection pool is now 300.\n" in out.text
    assert "maximum size: 100" not in out.text
    assert [c.action for c in out.changes] == ["replaced"]
    assert any("near-duplicate of MEMORY.md line 4" in s for s in out.skipped)


def test_reworded_log_entry_is_promoted_rather_than_trusted_to_a_cosine(embedder):
    """"likes brief" is not "prefers short" word for word: without lexical evidence the entry is added (a
    redundant line is recoverable, a dropped fact is not)."""
    log = "# day\n\n## Facts\n- For work, the user likes brief answers in English.\n"
    memory = "# M\n\n## Prefs\n- The user prefers short answers in English for work.\n"
    out = consolidate(memory, log, "2026-01-02", embedder, threshold=0.85)
    assert "- For work, the user likes brief answers in English.\n" in out.text
    assert [c.action for c in out.changes] == ["added"]


def test_dream_uses_a_given_embedder_and_reports_its_model(sample_ws, embedder):
    (sample_ws / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    ws = discover_workspace(sample_ws)
    result = dream(ws, load_settings(ws), DreamOptions(date="2026-11-30", embedder=embedder))
    assert result.status == "changed" and result.embedding_model == MiniLMEmbedder.model_id
    assert result.counts() == {"removed": 1}
