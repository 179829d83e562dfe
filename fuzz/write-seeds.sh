#!/usr/bin/env bash
# Write each frame of tests/fixtures/pgoutput/frames.txt (real pgoutput messages captured by
# scripts/capture-pgoutput.sh) as one binary file of the seed corpus of the pgoutput_decode
# fuzz target: fuzz/corpus/pgoutput_decode/seed-<line>-<tag>.
# Usage: fuzz/write-seeds.sh   (needs xxd)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
FRAMES="$HERE/../tests/fixtures/pgoutput/frames.txt"
OUT="$HERE/corpus/pgoutput_decode"
mkdir -p "$OUT"
rm -f "$OUT"/seed-*
line=0 count=0
while IFS=$'\t' read -r lsn hex; do
  line=$((line + 1))
  [[ -z "$lsn" || "$lsn" == \#* ]] && continue
  tag=$(printf '%s' "${hex:0:2}" | xxd -r -p)
  printf '%s' "$hex" | xxd -r -p >"$OUT/$(printf 'seed-%03d-%s' "$line" "$tag")"
  count=$((count + 1))
done <"$FRAMES"
echo "wrote $count seed file(s) to $OUT" >&2
