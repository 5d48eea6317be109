"""QA pass on `qwenmem search` / `qwenmem reindex` (and dream's use of the index): one regression test per defect."""

from __future__ import annotations

from conftest import invoke


def _paths(run) -> list[str]:
    assert run.code == 0, run.stderr
    return [h["path"] for h in run.json()["result"]["hits"]]


def test_search_since_an_absurdly_long_duration_covers_every_daily_log(sample_ws):
    invoke("reindex", "-w", str(sample_ws), "--embedder", "none")
    everything = invoke("search", "数据库", "-w", str(sample_ws), "--json", "-n", "20", "--since", "2000-01-01")
    for value in ("99999999d", "99999999999999999999w"):
        run = invoke("search", "数据库", "-w", str(sample_ws), "--json", "-n", "20", "--since", value)
        assert "internal error" not in run.stderr
        assert sorted(_paths(run)) == sorted(_paths(everything)) != []
    until = invoke("search", "数据库", "-w", str(sample_ws), "--json", "--until", "99999999d")
    assert _paths(until) == []
