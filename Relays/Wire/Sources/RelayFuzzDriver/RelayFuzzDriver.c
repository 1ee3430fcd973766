// The entry point of RelayFuzz when built for libFuzzer (Scripts/fuzz-relay.sh passes
// -DFUZZING). SwiftPM links an executable's `main` under the name TARGET_main, so libFuzzer's own
// `main` cannot be used: this hands control to libFuzzer's driver with the Swift target's
// LLVMFuzzerTestOneInput. Without FUZZING it is empty, and RelayFuzz's Swift `@main` replays
// inputs instead.
#ifdef FUZZING
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

int RelayFuzz_main(int argc, char **argv) {
    return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput);
}
#endif
