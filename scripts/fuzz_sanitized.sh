#!/usr/bin/env bash
# The fuzzer (scripts/fuzz.py) with mdshell's compiled pieces (mdshell/wire/_cwalk.c,
# _cdecode.c) built with AddressSanitizer and UndefinedBehaviorSanitizer.
#
#     scripts/fuzz_sanitized.sh                       # 2000 inputs, seed 1
#     scripts/fuzz_sanitized.sh --inputs 20000 --seed 7 --jobs 2
#
# The pieces are built out of the source tree, in a temporary directory holding a copy of
# the mdshell package (the normal build, mdshell/wire/*.so, is not touched), with gcc
# -fsanitize=address,undefined -fno-omit-frame-pointer. The fuzzer's compiled workers put
# that copy first on PYTHONPATH and run under gcc's libasan preloaded into the system Python
# (detect_leaks=0: CPython keeps memory on purpose; PYTHONMALLOC=malloc so ASan sees Python's
# allocations); the pure workers run as usual. A sanitizer report kills its worker: the
# fuzzer lists it as a "crash: sanitizer" finding with the report's first line, and the
# report is in the findings' JSON (--json FILE). Arguments go to scripts/fuzz.py.
# MDSHELL_SANITIZED_BUILD=DIR builds into DIR (kept); otherwise the temporary build is
# removed at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python3
if [ -n "${MDSHELL_SANITIZED_BUILD:-}" ]; then
    BUILD=$MDSHELL_SANITIZED_BUILD
    mkdir -p "$BUILD"
else
    BUILD=$(mktemp -d "${TMPDIR:-/tmp}/mdshell-sanitized.XXXXXX")
    trap 'rm -rf "$BUILD"' EXIT
fi

# A copy of the package without its built pieces, bytecode or caches.
rm -rf "$BUILD/mdshell"
(cd "$ROOT" && find mdshell -name '*.py' -o -name '*.c' -o -name '*.json' \
    | grep -v __pycache__ | while read -r f; do
        mkdir -p "$BUILD/$(dirname "$f")" && cp "$f" "$BUILD/$f"; done)

INCLUDE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
SUFFIX=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
FLAGS=(-shared -fPIC -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
       -fno-sanitize-recover=undefined -I"$INCLUDE")
for piece in _cwalk _cdecode; do
    gcc "${FLAGS[@]}" "$ROOT/mdshell/wire/$piece.c" -o "$BUILD/mdshell/wire/$piece$SUFFIX"
done

ASAN=$(gcc -print-file-name=libasan.so)
UBSAN=$(gcc -print-file-name=libubsan.so)
# The pieces load from the copy, and with the sanitizers: said before a long run starts.
(cd "$BUILD" && env PYTHONPATH="$BUILD" LD_PRELOAD="$ASAN $UBSAN" ASAN_OPTIONS=detect_leaks=0 \
    "$PY" -c '
import sys
from mdshell.wire import native
for name in ("_cwalk", "_cdecode"):
    m = native.piece(name)
    assert m is not None and m.__file__.startswith(sys.argv[1]), (name, m)
    print(f"sanitized {name}: {m.__file__}")
' "$BUILD")

args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--inputs 2000 --seed 1)
exec_status=0
"$PY" "$ROOT/scripts/fuzz.py" --sanitized "$BUILD" "${args[@]}" || exec_status=$?
exit $exec_status
