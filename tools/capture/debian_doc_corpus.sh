#!/bin/bash
# Builds the text corpus of the GPT-2-small capture (train_gpt2_small.py) from two Debian documentation packages:
# the reStructuredText sources that Sphinx ships beside the HTML of the Python 3.11 documentation (python3.11-doc)
# and of the Linux 6.1 kernel documentation (linux-doc-6.1). Both are in Debian 12's main archive, so any Debian
# machine with its package index can rebuild the corpus bit for bit from the versions recorded in corpus.json.
#
#   tools/capture/debian_doc_corpus.sh OUT_DIR
#
# Writes OUT_DIR/python3.11-doc.txt and OUT_DIR/linux-doc-6.1.txt (every `_sources/**/*.txt` of the package, in
# byte order of their paths, each followed by a blank line) and OUT_DIR/corpus.json (package versions, sha256 of
# the .deb files and of the text files). Needs apt-get and dpkg-deb; downloads about 50 MB.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$1
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
packages="python3.11-doc linux-doc-6.1"
entries=()
for pkg in $packages; do
  (cd "$work" && apt-get download "$pkg" >/dev/null 2>&1) || { echo "$0: apt-get download $pkg failed" >&2; exit 1; }
  deb=$(ls "$work"/"${pkg}"_*.deb)
  dpkg-deb -x "$deb" "$work/$pkg"
  text="$out/$pkg.txt"
  (cd "$work/$pkg" && find . -path '*/_sources/*' -name '*.txt' -type f | LC_ALL=C sort) > "$work/$pkg.list"
  [ -s "$work/$pkg.list" ] || { echo "$0: $pkg has no _sources/*.txt" >&2; exit 1; }
  : > "$text"
  while IFS= read -r f; do cat "$work/$pkg/$f" >> "$text"; printf '\n\n' >> "$text"; done < "$work/$pkg.list"
  version=$(dpkg-deb -f "$deb" Version)
  entries+=("$(printf '{"package": "%s", "version": "%s", "deb": "%s", "deb_sha256": "%s", "files": %d, "text": "%s", "text_bytes": %d, "text_sha256": "%s"}' \
    "$pkg" "$version" "$(basename "$deb")" "$(sha256sum "$deb" | cut -d' ' -f1)" "$(wc -l < "$work/$pkg.list")" \
    "$(basename "$text")" "$(stat -c %s "$text")" "$(sha256sum "$text" | cut -d' ' -f1)")")
done
{
  printf '{"description": "reStructuredText sources of two Debian documentation packages (_sources/**/*.txt, sorted by path, each followed by a blank line)",\n "sources": [\n  '
  (IFS=$'\n'; echo "${entries[*]}") | paste -sd, | sed 's/},{/},\n  {/g'
  printf ' ]\n}\n'
} > "$out/corpus.json"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$out/corpus.json"
cat "$out/corpus.json"
