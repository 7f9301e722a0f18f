#!/usr/bin/env bash
# Soak: runs the robustness test in rounds until DURATION has passed, with
# every fault kind (kill, isolate, pause, slow links, failpoint crashes,
# disk full, membership changes, and power cuts on lazyfs where FUSE and
# root are available) and the two traffic shapes of TestRobustness (the
# full one: 8 clients every 15 ms; the -short one: 5 clients every 20 ms),
# alternating. It stops at the first violation and keeps that round's
# history (logs, linearizability.html) in the soak directory, and prints
# the totals: rounds, operations checked, faults by kind.
#
# Usage: scripts/soak.sh DURATION [ROUND]
#   DURATION  how long to keep starting rounds, e.g. 30m, 4h (sleep syntax:
#             s, m, h suffixes)
#   ROUND     traffic duration of one round (default 2m)
# Environment: SOAK_DIR (default a new temporary dir) keeps the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 DURATION [ROUND]   (e.g. $0 2h 2m)" >&2; exit 2; }
[ $# -ge 1 ] || usage
to_seconds() {
	local v=$1
	case $v in
	*h) echo $(( ${v%h} * 3600 )) ;;
	*m) echo $(( ${v%m} * 60 )) ;;
	*s) echo "${v%s}" ;;
	*[!0-9]*|'') usage ;;
	*) echo "$v" ;;
	esac
}
total=$(to_seconds "$1")
round_len=${2:-2m}
dir=${SOAK_DIR:-$(mktemp -d /tmp/cairn-soak-XXXXXX)}
mkdir -p "$dir"

power=0
if [ "$(id -u)" = 0 ] && [ -e /dev/fuse ]; then
	power=1
else
	echo "soak: no root or /dev/fuse: running without power cuts" >&2
fi

# release_mounts aborts and detaches any lazyfs mount left under $dir by a
# round whose test process died before its cleanup (killed for memory, or
# by the timeout): its members would otherwise wait on the mount forever.
release_mounts() {
	local dev mnt fstype
	[ "$power" = 1 ] || return 0
	while read -r dev mnt fstype; do
		case $mnt in "$dir"/*) ;; *) continue ;; esac
		echo "soak: releasing the stale lazyfs mount $mnt" >&2
		[ -d /sys/fs/fuse/connections/"${dev#*:}" ] || mount -t fusectl fusectl /sys/fs/fuse/connections 2>/dev/null || true
		echo 1 >/sys/fs/fuse/connections/"${dev#*:}"/abort 2>/dev/null || true
		umount -l "$mnt" || true
	done < <(awk '{for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i+1) == "fuse.lazyfs") print $3, $5, $(i+1); break }}' /proc/self/mountinfo)
}
trap release_mounts EXIT

# Built once: every round runs the same test binary.
bin="$dir/robustness.test"
go test -c -o "$bin" ./tests/robustness

end=$(( $(date +%s) + total ))
round=0 ops=0
declare -A faults
while [ "$(date +%s)" -lt "$end" ]; do
	round=$((round + 1))
	shape=full short_flag=
	if [ $((round % 2)) = 0 ]; then shape=short short_flag=-test.short; fi
	out="$dir/round-$round.txt"
	echo "soak: round $round ($shape traffic, $round_len)"
	set +e
	# Run from the package directory, as go test does.
	(cd tests/robustness && CAIRN_ROBUSTNESS_DIR="$dir/round-$round" \
		CAIRN_ROBUSTNESS_DURATION="$round_len" CAIRN_ROBUSTNESS_POWER_CUTS=$power \
		"$bin" -test.run '^TestRobustness$' -test.v -test.count=1 -test.timeout 30m $short_flag) >"$out" 2>&1
	rc=$?
	set -e
	release_mounts
	n=$(sed -n 's/.*requests (.*), \([0-9]*\) in the history.*/\1/p' "$out" | tail -1)
	ops=$((ops + ${n:-0}))
	# The fault list follows the traffic line: "  <kind> m<i> [..]".
	while read -r kind; do
		faults[$kind]=$(( ${faults[$kind]:-0} + 1 ))
	done < <(awk '/in the history, final revision/ {on=1; next} on && /robustness_test.go:[0-9]+:   [a-z-]+ m[0-9]+ \[/ {print $2} on && !/robustness_test.go:[0-9]+:   / {on=0}' "$out")
	if [ $rc != 0 ]; then
		echo "soak: round $round FAILED (exit $rc); its output is $out and its history is in $dir/round-$round" >&2
		grep -E -- '--- FAIL|seed [0-9]+|Error|violation' "$out" | head -20 >&2 || true
		break
	fi
	rm -rf "$dir/round-$round"
done

echo "soak totals: $round rounds, $ops operations checked, power cuts $([ $power = 1 ] && echo on || echo off)"
for kind in $(printf '%s\n' "${!faults[@]}" | sort); do
	printf '  %-24s %d\n' "$kind" "${faults[$kind]}"
done
[ "${rc:-0}" = 0 ]
