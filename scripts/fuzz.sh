#!/usr/bin/env bash
# Runs every Fuzz* target of the repository for a short time each (default 10s). A target in a
# file with the integration tag drives the real Redis (the stack must be running) and runs
# with the tag; the others run without it, so their fuzz builds compile only the pure tier.
# Every target sits on Caddy-free code (a core or a parser package): a fuzz build instruments
# every package it links, and one that linked Caddy would compile Caddy's thousand packages
# again. go vet is left to make test and make unit (-vet=off).
#
# Go's fuzz coordinator before Go 1.27 can end a duration-bounded run with a bare
# "context deadline exceeded" when a starved worker misses the stop (go.dev/issue/75804): no
# input failed and nothing was written to testdata/fuzz. Such a run is retried once; a real
# finding ("Failing input written to", a panic, a t.Fatal) fails at once, and a second bare
# deadline fails too, so a target that never completes cannot pass.
set -euo pipefail
t=${1:-10s}
cd "$(dirname "$0")/.."
found=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# bare_deadline LOG: the run failed with the coordinator's deadline and nothing else.
bare_deadline() {
	grep -q 'context deadline exceeded' "$1" &&
		! grep -q -e 'Failing input written to' -e 'panic:' -e '_test.go:[0-9]*:' "$1"
}
mapfile -t files < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' 2>/dev/null || true)
# integration FILE: the file carries the integration tag (its targets run with it).
integration() { [ "$(head -n 1 "$1")" = "//go:build integration" ]; }
# links_caddy TAGS DIRS...: the packages among DIRS whose test binary, built with TAGS, links Caddy.
links_caddy() {
	local tags=$1
	shift
	[ $# -gt 0 ] || return 0
	go list -test -tags "$tags" -f '{{.ImportPath}}{{range .Deps}}{{if eq . "github.com/caddyserver/caddy/v2"}} links-caddy{{end}}{{end}}' "$@" |
		sed -n 's/\.test links-caddy$//p'
}
# A target whose fuzz build would link Caddy fails the run before anything is built.
tagged=() pure=()
for f in "${files[@]}"; do
	if integration "$f"; then tagged+=("./$(dirname "$f")"); else pure+=("./$(dirname "$f")"); fi
done
caddy=$(links_caddy integration "${tagged[@]}"; links_caddy "" "${pure[@]}")
if [ -n "$caddy" ]; then
	echo "fuzz: the fuzz builds of these packages link Caddy; move their targets onto the Caddy-free code they fuzz:" $caddy >&2
	exit 1
fi
for file in "${files[@]}"; do
	dir=$(dirname "$file")
	tags=()
	if integration "$file"; then
		tags=(-tags integration)
	fi
	for fn in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
		found=1
		for attempt in 1 2; do
			if [ "$attempt" = 1 ]; then
				echo "fuzz: ./$dir $fn for $t"
			else
				echo "fuzz: ./$dir $fn for $t, again: the last run ended on the coordinator deadline alone"
			fi
			if go test "${tags[@]}" -vet=off -run='^$' -fuzz="^${fn}\$" -fuzztime="$t" "./$dir" 2>&1 | tee "$log"; then
				break
			fi
			if [ "$attempt" = 1 ] && bare_deadline "$log"; then
				continue
			fi
			exit 1
		done
	done
done
[ $found = 1 ] || echo "fuzz: no fuzz targets yet"
