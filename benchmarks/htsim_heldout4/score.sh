#!/usr/bin/env bash
# Score a checkout's twin on a blind htsim set (the folder this script is run from:
# htsim_heldout4, or htsim_heldout5 through its link to this file), once, into a file.
#
#   score.sh CHECKOUT [OUT] [SCENARIO ...]
#
# CHECKOUT: a fabtwin working tree (its twin/ and benchmarks/htsim_calibration.py are scored).
# OUT: the table's file (default /tmp/<set>_twin_at_<commit>.txt, <set> heldout4 or
# heldout5); an existing file is never overwritten. SCENARIO: a subset of the set's scenarios (default: all 12).
# The set is the folder this script is run from (benchmarks/htsim_heldoutN/, with its .cm, CSVs
# and runs.json), whatever the checkout holds. The checkout is read only: its tree (without
# .git, .venv, __pycache__) is copied to a scratch folder, the set copied in beside it as
# benchmarks/htsim_heldoutN, and `python benchmarks/htsim_calibration.py --reference
# /work/shared/reference/htsim --new-runs <set> --only <scenarios>` runs there under nice -n 5
# and /usr/bin/time; the scratch folder is removed at exit. Python: $PYTHON, else the
# checkout's .venv, else /work/main/.venv. The file holds the commit scored, the time, the
# load, the command, the harness's whole output and its wall/CPU/RSS.
set -euo pipefail

usage() { sed -n '5,9p' "$0" | sed 's/^# \{0,3\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
CHECKOUT=$(cd "$1" 2>/dev/null && pwd) || { echo "score.sh: $1: no such folder" >&2; exit 2; }
shift
[ -f "$CHECKOUT/benchmarks/htsim_calibration.py" ] && [ -d "$CHECKOUT/twin" ] || {
    echo "score.sh: $CHECKOUT: not a fabtwin checkout (benchmarks/htsim_calibration.py, twin/)" >&2
    exit 2; }
SET=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -f "$SET/__init__.py" ] || SET="$SET/htsim_heldout4"  # run from the folder that holds the set
[ -f "$SET/__init__.py" ] && [ -f "$SET/runs.json" ] || { echo "score.sh: $SET: no htsim set" >&2; exit 2; }
PKG=$(basename "$SET")  # htsim_heldout4, htsim_heldout5
NAME=${PKG#htsim_}
REFERENCE=${REFERENCE:-/work/shared/reference/htsim}
[ -f "$REFERENCE/README.md" ] || { echo "score.sh: $REFERENCE: no htsim reference folder" >&2; exit 2; }

COMMIT=$(git -C "$CHECKOUT" --no-optional-locks rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$CHECKOUT" --no-optional-locks status --porcelain 2>/dev/null | wc -l)
OUT=${1:-/tmp/${NAME}_twin_at_$COMMIT.txt}
[ $# -ge 1 ] && shift
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT";; esac
if [ -e "$OUT" ]; then echo "score.sh: $OUT exists; not overwritten (give another OUT)" >&2; exit 1; fi
if [ -n "${PYTHON:-}" ]; then :
elif [ -x "$CHECKOUT/.venv/bin/python" ]; then PYTHON="$CHECKOUT/.venv/bin/python"
else PYTHON=/work/main/.venv/bin/python; fi

WORK=$(mktemp -d /tmp/$NAME-score.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/repo"
tar -C "$CHECKOUT" --exclude=./.git --exclude=./.venv --exclude=__pycache__ --exclude='*.egg-info' \
    -cf - . | tar -C "$WORK/repo" -xf -
rm -rf "$WORK/repo/benchmarks/$PKG"
mkdir "$WORK/repo/benchmarks/$PKG"
cp "$SET"/__init__.py "$SET"/gen_cm.py "$SET"/runs.json "$SET"/*.cm "$SET"/*.fct.csv \
    "$WORK/repo/benchmarks/$PKG/"
NEW="$WORK/repo/benchmarks/$PKG"

cd "$WORK/repo"
export PYTHONPATH="$WORK/repo" PYTHONPYCACHEPREFIX="$WORK/pycache"
if [ $# -gt 0 ]; then NAMES=("$@"); else
    mapfile -t NAMES < <("$PYTHON" -c "import benchmarks.$PKG as s; print('\n'.join(s.SCENARIOS))")
fi
# an empty --only would score every calibration scenario instead
[ ${#NAMES[@]} -gt 0 ] || { echo "score.sh: $SET: no scenario read" >&2; exit 2; }
known=$("$PYTHON" -c "import benchmarks.$PKG as s; print(' '.join(s.available()))")
for n in "${NAMES[@]}"; do
    case " $known " in *" $n "*) ;; *) echo "score.sh: no scenario $n in $SET (or a run missing)" >&2; exit 2;; esac
done
CMD=("$PYTHON" benchmarks/htsim_calibration.py --reference "$REFERENCE" --new-runs "$NEW" --only "${NAMES[@]}")
{
    echo "$NAME scored on $CHECKOUT at commit $COMMIT ($DIRTY uncommitted paths), $(date -u +%Y-%m-%dT%H:%M:%SZ), load $(cut -d' ' -f1 /proc/loadavg)"
    echo "set: $SET (${#NAMES[@]} scenarios); python: $PYTHON"
    echo "command (in a copy of the checkout, the set as benchmarks/$PKG): python benchmarks/htsim_calibration.py --reference $REFERENCE --new-runs benchmarks/$PKG --only ${NAMES[*]}"
} > "$WORK/out.txt"
status=0
nice -n 5 /usr/bin/time -o "$WORK/time.txt" -f "%e %U %S %M" "${CMD[@]}" >> "$WORK/out.txt" 2>&1 || status=$?
read -r wall user sys rss < <(tail -n 1 "$WORK/time.txt")
echo "harness: exit $status, wall $wall s, CPU $(awk "BEGIN {print $user + $sys}") s, max RSS $((rss / 1024)) MB" >> "$WORK/out.txt"
(set -o noclobber; cat "$WORK/out.txt" > "$OUT")
echo "score.sh: $OUT (harness exit $status)"
exit "$status"
