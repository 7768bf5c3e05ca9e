#!/bin/sh
# Regenerate every golden fixture: runs each gen_*.py in this directory with
# Debian's /usr/bin/python3 (which has python3-torch). Stops at the first
# failing generator.
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
for script in "$dir"/gen_*.py; do
	[ -e "$script" ] || continue
	echo "== $(basename "$script")"
	/usr/bin/python3 "$script"
done
