"""`sessions repair --convert-1x` bench: the real 1.x sessions placed in a copy of the generated 2.x workspace,
converted by a real run, and checked against QwenPaw 2.2.2.post1's own load (agentscope 2.0.10 venv with the
qwenpaw wheel, bench/peer/agentscope2_check.py --make-venv).

    python bench/quality/repair_gen2_convert_bench.py [--no-record]

Sources: every 1.x session file of ../shared/corpus/real (sessions/*.json*, backups included), the 1.x fixtures
of tests/fixtures/sessions/, and the 1.x files of the generated 2.x corpus (discord, telegram, orphan). Measured per
file: converted (status repaired), the original in the quarantine byte-identical, mode 0600, every message id of
the 1.x conversation in the same order in agent.state.context, `AgentState.model_validate` passes
(bench/peer/agentscope2_validate.py), and QwenPaw's load of the converted file equals QwenPaw's load of the 1.x file
(bench/peer/agentscope2_convert.py; for a damaged original, of the 1.x repair of it, since QwenPaw cannot load the
damaged file at all).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from qwenmem.core.repair.diagnose import diagnose  # noqa: E402
AS2_VENV = Path(os.environ.get("QWENMEM_AS2_VENV", "/tmp/as2-venv"))
SHARED = Path(os.environ.get("QWENMEM_SHARED", ROOT.parent / "shared"))
GEN2_WS = SHARED / "corpus" / "generated" / "qwenpaw-2.2.2" / "root" / "workspaces" / "default"


def gen1_sources() -> list[Path]:
    real = sorted(p for p in (SHARED / "corpus" / "real").rglob("*.json*") if "sessions" in p.parts)
    return real + sorted((ROOT / "tests" / "fixtures" / "sessions").glob("*.json*"))


def _workspace(tmp: Path) -> Path:
    ws = tmp / "ws"
    if GEN2_WS.is_dir():
        shutil.copytree(GEN2_WS, ws)
        for base, dirs, files in os.walk(ws):
            for name in dirs + files:
                p = Path(base) / name
                p.chmod(p.stat().st_mode | stat.S_IWUSR)
    else:
        (ws / "sessions").mkdir(parents=True)
        (ws / "sessions" / ".synced.json").write_text("{}")
    return ws


def _ids(doc: dict) -> list:
    items = doc["agent"]["memory"]["content"]
    return [(i[0] if isinstance(i, list) else i).get("id") for i in items]


def run() -> tuple[list[dict], dict]:
    from qwenmem.core.repair.run import REPAIR, run_repair
    from qwenmem.core.sessions import iter_session_refs
    from qwenmem.core.workspace import discover_workspace

    tmp = Path(tempfile.mkdtemp(prefix="repair2-convert-"))
    ws_path = _workspace(tmp)
    before = tmp / "before"
    before.mkdir()
    an_hour_ago = time.time() - 3600
    placed: dict[str, Path] = {}
    for i, src in enumerate(gen1_sources()):
        dest = ws_path / "sessions" / "gen1" / f"{i:02d}_{src.name.replace('.json', '')}.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        os.utime(dest, (an_hour_ago, an_hour_ago))
        placed[dest.relative_to(ws_path).as_posix()] = src
    for p in sorted((ws_path / "sessions").rglob("*.json")):
        rel = p.relative_to(ws_path).as_posix()
        found = diagnose(p.read_bytes())
        if rel not in placed and not p.name.startswith(".") and found.generation == "1.x" and found.session:
            placed[rel] = Path("generated corpus") / p.relative_to(ws_path / "sessions")
    originals = {rel: (ws_path / rel).read_bytes() for rel in placed}
    ws = discover_workspace(ws_path)
    t0 = time.monotonic()
    result = run_repair(ws, list(iter_session_refs(ws)), REPAIR, convert_gen1=True)
    elapsed = time.monotonic() - t0
    reports = {r.path: r for r in result.files}
    rows, pairs = [], []
    for rel, src in placed.items():
        rep, data = reports[rel], originals[rel]
        d = diagnose(data)
        loadable = d.new_bytes or data  # what QwenPaw can load: the file, or its 1.x repair
        ref = before / rel.replace("/", "__")
        ref.write_bytes(loadable)
        after = ws_path / rel
        doc = json.loads(after.read_bytes())
        ctx = doc.get("agent", {}).get("state", {}).get("context", [])
        source = str(src).replace(str(SHARED) + "/", "").replace(str(ROOT) + "/", "")
        row = {"file": rel, "source": source, "status": rep.status,
               "messages": len(ctx),
               "compressed": next((int(a.split()[0]) for a in rep.actions if "marked compressed come back" in a), 0),
               "preserved": bool(rep.quarantined) and (ws_path / rep.quarantined).read_bytes() == data,
               "mode": oct(after.stat().st_mode & 0o777),
               "ids_kept": [m.get("id") for m in ctx] == _ids(json.loads(loadable))}
        rows.append(row)
        pairs += [str(ref), str(after)]
    python = AS2_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "peer" / "agentscope2_check.py"), "--make-venv", str(AS2_VENV)],
                       check=True)
    valid = json.loads(subprocess.run([str(python), str(ROOT / "bench" / "peer" / "agentscope2_validate.py"),
                                       *pairs[1::2]], capture_output=True, text=True).stdout)["files"]
    same = json.loads(subprocess.run([str(python), str(ROOT / "bench" / "peer" / "agentscope2_convert.py"), *pairs],
                                     capture_output=True, text=True).stdout)["pairs"]
    for row, v, s in zip(rows, valid, same):
        row["agentstate_valid"] = v["ok"] and v["kind"] == "2.x"
        row["equal_to_qwenpaw"] = s["equal"]
        row["difference"] = s["difference"]
    others = [r for p, r in reports.items() if p not in placed]
    summary = {"seconds": round(elapsed, 2), "workdir": str(tmp),
               "others_untouched": sum(1 for r in others if r.status in ("ok", "repaired")), "others": len(others)}
    return rows, summary


def markdown(rows: list[dict], summary: dict) -> str:
    n = len(rows)

    def count(key: str) -> str:
        return f"{sum(1 for r in rows if r[key])}/{n}"

    lines = ["Command: `python bench/quality/repair_gen2_convert_bench.py`. Every 1.x session of the real corpus (backups "
             "included), the 1.x fixtures of tests/fixtures/sessions/ and the generated corpus's 1.x files, placed "
             "in a copy of the generated 2.x workspace and converted by `run_repair(convert_gen1=True)` (= `sessions "
             f"repair --all --convert-1x`) in {summary['seconds']} s. *Equal to QwenPaw* = QwenPaw 2.2.2.post1's "
             "load of the converted file equals its load of the 1.x file (its own `parse_legacy_memory_state`, "
             "`Msg.from_dict` shim and load-time sanitizer, bench/peer/agentscope2_convert.py), ignoring the values "
             "AgentScope generates afresh on each load; a truncated original is compared through its 1.x repair.",
             "", "| file | source | messages | compressed back in context | converted | original in quarantine | "
             "mode | ids kept in order | AgentState valid | equal to QwenPaw |",
             "|---|---|---:|---:|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['file']} | {r['source']} | {r['messages']} | {r['compressed']} | "
                     f"{'yes' if r['status'] == 'repaired' else r['status']} | {'yes' if r['preserved'] else 'NO'} | "
                     f"{r['mode']} | {'yes' if r['ids_kept'] else 'NO'} | {'yes' if r['agentstate_valid'] else 'NO'} | "
                     f"{'yes' if r['equal_to_qwenpaw'] else 'NO: ' + r['difference'][:80]} |")
    lines += ["", f"Converted {sum(1 for r in rows if r['status'] == 'repaired')}/{n}; originals preserved "
              f"{count('preserved')}; ids kept {count('ids_kept')}; AgentState valid {count('agentstate_valid')}; "
              f"equal to QwenPaw's own conversion {count('equal_to_qwenpaw')}; "
              f"{sum(r['messages'] for r in rows)} messages. The workspace's own 2.x files: "
              f"{summary['others_untouched']}/{summary['others']} ok or repaired as without the flag."]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    rows, summary = run()
    md = markdown(rows, summary)
    print(md)
    if not args.no_record:
        sys.path.insert(0, str(ROOT))
        from bench._results import update_section

        update_section("repair2-convert", "## Converting 1.x sessions in a 2.x workspace (`--convert-1x`)\n" + md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
