#!/usr/bin/env bash
# Puts each test file in its tier (CONTRIBUTING.md, "Tests"): adds the line
# `//go:build integration` to every _test.go file that reaches a server, a browser or a built
# binary (the rule of internal/testlayout), then to every test file that no longer compiles
# without the tag because it uses what a tagged file of its package declares, until the pure
# tier (no tag) compiles again. It changes nothing that is already in place; run it after
# adding or merging test files, and review what it tagged (git diff).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

tag() { # tag FILE: add the build line (combined with the file's own constraint, if any)
	local f=$1 first
	first=$(head -n1 "$f")
	case "$first" in
	'//go:build '*integration*) return ;;
	'//go:build '*) sed -i "1s|^//go:build \(.*\)$|//go:build integration \&\& (\1)|" "$f" ;;
	*) sed -i '1i //go:build integration\n' "$f" ;;
	esac
	echo "tagged $f"
}

$GO test -count=1 -v -run '^TestEveryTestFileThatReachesAServerCarriesTheIntegrationTag$' ./internal/testlayout -args -fix |
	sed -n 's/.*: \(.*_test\.go\): added.*/tagged \1/p'
# go vet compiles every test file of the pure tier (no tag) without running anything; it
# reports the first errors of each package, so it runs again on the packages that failed
# until they compile.
pkgs=./...
while ! out=$($GO vet $pkgs 2>&1); do
	files=$(grep -oE '[^ :]+_test\.go:[0-9]+:[0-9]+: undefined: ' <<<"$out" | cut -d: -f1 | sed 's|^\./||' | sort -u)
	if [ -z "$files" ]; then
		echo "$out" >&2
		echo "tag-tests: the pure tier does not compile for another reason than a tagged helper" >&2
		exit 1
	fi
	for f in $files; do tag "$f"; done
	pkgs=$(for f in $files; do echo "./$(dirname "$f")"; done | sort -u)
done
$GO vet ./...
