#!/usr/bin/env bash
# Run measure.py against the engine of one commit (a clean `git archive` of it, so that
# uncommitted work in the checkout does not leak in), with this checkout's benchmarks/formats/
# scripts; results go to this checkout's benchmarks/results/formats_<set>.json.
#
#   benchmarks/formats/at_commit.sh 2f9099f --set retqa_tables_zh --label before
#   benchmarks/formats/at_commit.sh HEAD --set laws_zh --label after
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
commit="$(git -C "$here" rev-parse --short "${1:?commit}")"
shift
code="${RAG_FORMATS_CACHE:-/tmp/rag-formats-cache}/code-$commit"
if [ ! -d "$code/rag_app" ]; then
    mkdir -p "$(dirname "$code")"
    tmp="$(mktemp -d "$code.XXXXXX")"
    git -C "$here" archive "$commit" | tar -x -C "$tmp"
    mv -T "$tmp" "$code" 2>/dev/null || rm -rf "$tmp"  # another run extracted it first
fi
rm -rf "$code/benchmarks/formats" && cp -r "$here/benchmarks/formats" "$code/benchmarks/formats"
set_name=""
for ((i = 1; i <= $#; i++)); do
    if [ "${!i}" = "--set" ]; then j=$((i + 1)); set_name="${!j}"; fi
done
export RAG_SHARED_DATA="${RAG_SHARED_DATA:-$(cd "$here/.." && pwd)/shared/data}"
export RAG_FORMATS_COMMIT="$commit${RAG_FORMATS_NOTE:+ [$RAG_FORMATS_NOTE]} $(git -C "$here" log -1 --format=%s "$commit" | cut -c1-100)"
# the parse child runs `python -m rag_app...`: from the commit's tree, never the checkout's
cd "$code"
export PYTHONPATH="$code"
exec "$here/.venv/bin/python" "$code/benchmarks/formats/measure.py" \
    --out "$here/benchmarks/results/formats_${set_name}.json" "$@"
