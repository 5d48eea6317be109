#!/usr/bin/env bash
# Build the sqlite3 command-line shell from Debian's own source package with the sqlite_dbpage virtual table, so
# its `.recover` works, and install it as DEST/qwenmem-sqlite3 (`qwenmem history salvage` finds it there, beside the
# venv's python). Why: Debian's sqlite3 links the system libsqlite3, which is built without SQLITE_ENABLE_DBPAGE_VTAB,
# so its `.recover` fails with "SQL logic error"; no PyPI wheel ships a shell with `.recover` (APSW's bundled shell
# and sqlean.py have the dbpage table but not the recovery extension).
#
#   scripts/build_sqlite3.sh DEST          e.g. scripts/build_sqlite3.sh .venv/bin
#
# Uses only Debian's package archive through apt (a private deb-src list in a temp dir; the system's apt
# configuration is not changed), gcc and tclsh (installed with apt-get when missing). About a minute on 2 cores.
set -euo pipefail
DEST="${1:?usage: build_sqlite3.sh DEST_DIR}"
mkdir -p "$DEST"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/qwenmem-sqlite3-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v tclsh >/dev/null 2>&1 || need+=(tcl)
command -v make >/dev/null 2>&1 || need+=(make)
command -v dpkg-source >/dev/null 2>&1 || need+=(dpkg-dev)
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
if [ "${#need[@]}" -gt 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null)
fi

# deb-src twins of the machine's own deb sources (deb822 .sources files and one-line lists)
mkdir -p "$WORK/parts" "$WORK/lists/partial"
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" > "$WORK/parts/$(basename "$f")"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && { grep -E '^deb ' "$f" | sed 's/^deb /deb-src /' > "$WORK/parts/$(basename "$f").list" || true; }
done
APT=(apt-get -qq -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$WORK/parts"
     -o "Dir::State::Lists=$WORK/lists" -o "APT::Sandbox::User=root")
"${APT[@]}" update
(cd "$WORK" && "${APT[@]}" source --download-only sqlite3 >/dev/null)
(cd "$WORK" && dpkg-source -q -x ./*.dsc src >/dev/null)

cd "$WORK/src"
./configure --quiet --disable-tcl --enable-fts5 >/dev/null
make -s sqlite3.c shell.c >/dev/null
# The shell's own options (Makefile.in SHELL_OPT) plus FTS5 (history.db has an fts5 table) and JSON; static, so
# the system libsqlite3 is not used.
gcc -O2 -fno-strict-aliasing -DSQLITE_THREADSAFE=1 -DSQLITE_USE_URI=1 -DHAVE_USLEEP \
    -DSQLITE_ENABLE_DBPAGE_VTAB -DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_ENABLE_FTS4 -DSQLITE_ENABLE_FTS5 \
    -DSQLITE_ENABLE_RTREE -DSQLITE_ENABLE_JSON1 -DSQLITE_ENABLE_STMTVTAB -DSQLITE_ENABLE_BYTECODE_VTAB \
    -DSQLITE_ENABLE_EXPLAIN_COMMENTS -DSQLITE_ENABLE_UNKNOWN_SQL_FUNCTION -DSQLITE_ENABLE_OFFSET_SQL_FUNC \
    shell.c sqlite3.c -o qwenmem-sqlite3 -lm -lpthread -ldl

# it must recover before it is installed
./qwenmem-sqlite3 "$WORK/probe.db" "CREATE TABLE t (x); INSERT INTO t VALUES ('probe');"
./qwenmem-sqlite3 "$WORK/probe.db" .recover | grep -q "'probe'"
install -m 0755 qwenmem-sqlite3 "$DEST/qwenmem-sqlite3.tmp"
mv -f "$DEST/qwenmem-sqlite3.tmp" "$DEST/qwenmem-sqlite3"
echo "built $DEST/qwenmem-sqlite3 ($("$DEST/qwenmem-sqlite3" -version | cut -d' ' -f1), Debian source $(cd "$WORK" && ls ./*.dsc | sed 's|./||; s|\.dsc$||'))"
