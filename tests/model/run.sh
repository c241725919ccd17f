#!/bin/sh
# Model-check an engine: build its nodes (graph.py), then explore schedules (explore.mjs).
#
#   tests/model/run.sh [ENGINE] [explore.mjs options...]
#
# ENGINE: `current` (this checkout, the default) or a commit of this repository, e.g. 9cb0f7b
# (the engine before format 3; extracted with git archive into a temporary folder).
# Examples:
#   tests/model/run.sh current --lock mutex --schedules 5000 --stalls 0-4
#   tests/model/run.sh 9cb0f7b --lock mutex --schedules 1000 --stall-sizes 6 --shrink
#   tests/model/run.sh current --lock semaphore --callers 4-9 --systematic --victims 0,1,2 --stall-sizes 6,20
#   tests/model/run.sh current --debounce debounce --callers 3-10 --stalls 0-4 --crashes 1-2 --shrink
# Exit status 1 when a schedule broke the lock (or the debounce); the JSON summary names it (`--replay` it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-"$root/.venv/bin/python"}
engine=current
case "${1:-}" in
  ""|-*) ;;
  *) engine=$1; shift ;;
esac
graphs=$(mktemp "${TMPDIR:-/tmp}/n8nlock-graphs.XXXXXX")
trap 'rm -f "$graphs"' EXIT
if [ "$engine" = current ]; then
  "$python" "$here/graph.py" -o "$graphs"
else
  "$python" "$here/graph.py" --commit "$engine" -o "$graphs"
fi
node "$here/explore.mjs" --graphs "$graphs" "$@"
