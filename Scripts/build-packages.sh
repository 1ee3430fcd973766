#!/usr/bin/env bash
# Builds the products of every package of the repository in one configuration and one build
# folder, then runs the release shapes. Swift 6.3.1's optimiser has crashed on code that debug
# builds compiled, so .ci/run builds everything in release too (Tests/ReleaseShapes/README.md).
#
#   Scripts/build-packages.sh CONFIGURATION SCRATCH [PRODUCT ...]
#
# CONFIGURATION is debug or release, SCRATCH the build folder, PRODUCT a product to build, `.` for
# the root package (its libraries and snippets), or a group below (@tools, @benchmarks): the root and
# every product of every package when none is named. ReleaseShapes is always built, and run.
#
# One root for all: Tests/ReleaseShapes depends on every other package, so one resolution and one
# build plan serve them all, and each dependency is compiled once. Building each package as its
# own root in one folder compiled more (measured on 2 cores from a fresh folder: 15.5 minutes for
# the release builds that way, 10 min 47 s this way). Roots can share a folder: .ci/run's relay
# roots share their debug folder, and a second root there kept the first one's checkouts and did
# not compile SwiftNIO again. The root package comes first, as its own root, for its snippets,
# which only a root builds.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 debug|release SCRATCH [PRODUCT ...]" >&2; exit 2; }
configuration=$1
scratch=$2
shift 2
# Everything but the benchmarks, and the benchmarks: .ci/run builds the second group in a call of its
# own, so that the steps between the two calls can use what the first built.
tools=(
    SQLitePeer SQLiteBench           # Relays/SQLite
    RelayPeer RelayBench             # Relays/Postgres
    RelayFuzz                        # Relays/Wire, without the fuzzer (Scripts/fuzz-relay.sh has that)
    ContractPeer                     # Relays/Contract
    ChatServer WebSocketChurn        # Examples
)
benchmarks=(MailroomBenchmarks Probe)
root=false
products=()
[ $# -gt 0 ] || set -- . @tools @benchmarks
for name in "$@"; do
    case $name in
    .) root=true ;;
    @tools) products+=("${tools[@]}") ;;
    @benchmarks) products+=("${benchmarks[@]}") ;;
    *) products+=("$name") ;;
    esac
done

# SwiftPM keeps one build plan per folder and does not notice that the root package changed (it
# then says "No target named …", or builds nothing): the plan is removed before each root, so it
# is made anew; what is compiled already is kept.
build() {
    local package=$1
    shift
    rm -f "$scratch/$configuration.yaml"
    local start=$SECONDS
    swift build -c "$configuration" --package-path "$package" --scratch-path "$scratch" "$@"
    echo "--- $configuration build of $package $*: $((SECONDS - start)) s"
}

if $root; then
    build .  # the libraries and the snippets
fi
# The libraries of every package are the shapes' dependencies; the products are built by name.
build Tests/ReleaseShapes
for product in "${products[@]}"; do
    swift build -c "$configuration" --package-path Tests/ReleaseShapes --scratch-path "$scratch" --product "$product"
done
echo "--- $configuration builds of ${products[*]}: done"

# The next package built in this folder as its own root makes its plan anew too.
rm -f "$scratch/$configuration.yaml"

# Built is not enough: the shapes check what they did.
"$scratch/$configuration/ReleaseShapes"

# Whether this toolchain still crashes on the reproduction of the optimiser crash that made the
# resuming calls untyped: said, not failed on, either way (once, with the root package).
if [ "$configuration" = release ] && $root; then
    crash_log="$scratch/compiler-crash.log"
    if swiftc -O Tests/ReleaseShapes/CompilerCrash/Reproduction.swift -o "$scratch/compiler-crash" >"$crash_log" 2>&1; then
        echo "note: this toolchain builds Tests/ReleaseShapes/CompilerCrash/Reproduction.swift with -O: the crash is fixed in it"
    else
        echo "note: this toolchain still fails on Tests/ReleaseShapes/CompilerCrash/Reproduction.swift with -O: $(grep -m1 -E 'signal|error' "$crash_log")"
    fi
fi
