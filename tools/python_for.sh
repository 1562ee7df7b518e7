#!/usr/bin/env bash
# Prints the path of a Python interpreter of version $1 (e.g. 3.12): `python3.12` on the
# PATH if it runs, else one under pyenv's versions. Exits 1 with a message if none.
set -u
v="$1"
for cand in "python$v" "$(command -v pyenv >/dev/null && pyenv root)/versions/$v"*/bin/"python$v"; do
    if [ -n "$cand" ] && "$cand" -c "import sys; assert sys.version_info[:2] == tuple(map(int, '$v'.split('.')))" 2>/dev/null; then
        command -v "$cand"
        exit 0
    fi
done
echo "no Python $v found (neither python$v on the PATH nor under pyenv's versions): install Python $v" >&2
exit 1
