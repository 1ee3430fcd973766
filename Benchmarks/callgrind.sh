#!/usr/bin/env bash
# Instructions per post, counted by callgrind: alone and beside 10,000 subscriptions of each
# kind, and a raw AsyncStream yield. Counts do not drift with this machine's speed the way the
# timings in run.sh do; they do not see cache misses either, so they complement, not replace.
#   Benchmarks/callgrind.sh      (needs valgrind: apt-get install valgrind; about 2 minutes)
set -euo pipefail
cd "$(dirname "$0")"
swift build -c release --product Probe >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# valgrind 3.19 cannot read the DWARF 5 debug info that Swift 6.3 emits (it stops at "unhandled
# dwarf2 abbrev form code 0x25"); a copy without it runs.
strip -g -o "$work/Probe" .build/release/Probe

# Instructions for `posts` posts: the run's total less that of a run with half as many posts,
# which leaves out start-up and building the crowd.
per_post() {
    local counts=()
    for posts in 10000 20000; do
        counts+=("$(SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            "$work/Probe" count "$1" "$2" "$posts" "${@:3}" 2>&1 | sed -n 's/.*Collected : //p')")
    done
    echo $(((counts[1] - counts[0]) / 10000))
}

floor=$(per_post yield alone)
printf '%-36s %8s %8s %8s\n' "Instructions per post" alone "beside" ratio
printf '%-36s %8s\n' "raw AsyncStream yield" "$floor"
for crowd in types values objects; do
    alone=$(per_post "$crowd" alone)
    beside=$(per_post "$crowd" beside)
    label="Mailroom, beside 10k other $crowd"
    printf '%-36s %8s %8s %8s\n' "$label" "$alone" "$beside" "$(python3 -c "print(f'{$beside / $alone:.3f}x')")"
done
printf '%-36s %8s\n' "Mailroom.shared read per post" "$(per_post shared alone)"
# History (Coming Back article): a type that keeps it, to an ordinary and to a positioned
# subscription; and a type without it beside one that keeps it (one atomic load and a bit test).
printf '%-36s %8s\n' "history-keeping type, alone" "$(per_post history alone)"
printf '%-36s %8s\n' "history-keeping, positioned reader" "$(per_post history-positioned alone)"
printf '%-36s %8s\n' "history-keeping, value-pinned" "$(per_post history-pinned alone)"
printf '%-36s %8s\n' "no history, beside a type with it" "$(per_post history-beside alone)"
# Latest mail (Replay article): value-pinned posts of a type that keeps it.
printf '%-36s %8s\n' "latest-keeping type, value-pinned" "$(per_post latest alone)"
# Demand (Server Patterns): a subscription made and dropped, with nobody watching counts and with
# one watcher of its room's count; per cycle, which is two count changes.
printf '%-36s %8s\n' "subscribe + drop, nobody watching" "$(per_post demand alone)"
printf '%-36s %8s\n' "subscribe + drop, its count watched" "$(per_post demand-watched alone)"
# With AsyncMailObservability (swift-metrics' no-op backend, no ServiceContext): its own cost.
for crowd in types values objects; do
    printf '%-36s %8s\n' "observed, $crowd shape, alone" "$(per_post "$crowd" alone observed)"
done

# What a post does under a lock that a post to another room also takes is no longer counted here:
# a post takes none (Architecture article), and contention is measured with threads, not
# instructions (`swift run -c release Probe threads`, figures in README.md).
