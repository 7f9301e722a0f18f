#!/usr/bin/env bash
# Sets the one version all of cairn's Go modules are released with, and
# lists the tags that release needs.
#
# Usage: scripts/set-version.sh [-n] VERSION      (VERSION: vMAJOR.MINOR.PATCH[-pre])
#
# It rewrites, in every go.mod of the repository, each requirement of a
# cairn module (github.com/cairnkv/cairn[/...]) to VERSION, and sets
# CairnVersion in server/config/version.go (the version the binaries
# report) to match. The replace directives that point each module at its
# sibling directories stay: they make a checkout build without the tags.
# Then it prints one tag per released module (the modules go.work uses):
# Go finds module <dir> of a repository at the tag <dir>/VERSION, and the
# root module at VERSION. Nothing is committed, tagged or pushed.
#
# -n (dry run) prints the requirements it would change and the tags, and
# changes no file.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH" GOWORK=off GOFLAGS= GOPROXY=off

dry=""
if [ "${1:-}" = "-n" ]; then dry=1; shift; fi
version="${1:-}"
if ! [[ "$version" =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: $0 [-n] vMAJOR.MINOR.PATCH[-prerelease] (got '${version}')" >&2
  exit 2
fi
if [ "${BASH_REMATCH[1]}" -ge 2 ]; then
  # From v2 on Go wants a /vN suffix on every module path: a change of all
  # import paths, not something a version bump can do.
  echo "$0: $version needs /v${BASH_REMATCH[1]} module paths; set-version only handles v0 and v1" >&2
  exit 2
fi

prefix=github.com/cairnkv/cairn
changed=0
while IFS= read -r gomod; do
  # Requirements of cairn modules, as "path version" lines (go.mod's
  # require blocks and single-line requires).
  reqs=$(awk '/^require \($/ { block = 1; next }
    block && /^\)/ { block = 0; next }
    block { print $1, $2; next }
    /^require / { print $2, $3 }' "$gomod" | grep -E "^$prefix(/[^ ]*)? " || true)
  [ -n "$reqs" ] || continue
  edits=()
  while read -r path old; do
    [ "$old" = "$version" ] && continue
    echo "$gomod: $path $old -> $version"
    edits+=("-require=$path@$version")
    changed=$((changed + 1))
  done <<<"$reqs"
  if [ -z "$dry" ] && [ ${#edits[@]} -gt 0 ]; then
    go mod edit "${edits[@]}" "$gomod"
  fi
done < <(find . -name go.mod -not -path './.git/*' | sort)

plain="${version#v}"
versionFile=server/config/version.go
if ! grep -qE '^[[:space:]]*CairnVersion[[:space:]]*= "[^"]*"' "$versionFile"; then
  echo "$0: no CairnVersion in $versionFile" >&2
  exit 1
fi
if ! grep -qE "^[[:space:]]*CairnVersion[[:space:]]*= \"$plain\"" "$versionFile"; then
  echo "$versionFile: CairnVersion -> $plain"
  changed=$((changed + 1))
  if [ -z "$dry" ]; then
    sed -i -E "s/^([[:space:]]*CairnVersion[[:space:]]*= )\"[^\"]*\"/\1\"$plain\"/" "$versionFile"
    gofmt -w "$versionFile"
  fi
fi
echo "$changed change(s)${dry:+ (dry run: none written)}"

echo "tags to push:"
go work edit -json go.work | sed -nE 's#^[[:space:]]*"DiskPath": "([^"]*)",?$#\1#p' | sort |
  while read -r dir; do
    dir="${dir#./}"
    if [ "$dir" = . ]; then echo "$version"; else echo "$dir/$version"; fi
  done
