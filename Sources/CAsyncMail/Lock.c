#include "CAsyncMail.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/// How many times a contended taker looks at the word before it sleeps: about a microsecond or
/// two, long enough for a holder on another core to finish a look-up or a short delivery, short
/// enough that a thread whose holder was preempted soon gives its core back.
#define ASYNCMAIL_LOCK_SPINS 64

static inline void asyncmail_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

void asyncmail_lock_lock_contended(asyncmail_lock_t *lock) {
    for (int spin = 0; spin < ASYNCMAIL_LOCK_SPINS; spin++) {
        // Read before trying: a compare-and-exchange on a held word would take its cache line away
        // from the holder for nothing.
        if (__atomic_load_n(&lock->_word, __ATOMIC_RELAXED) == 0 && asyncmail_lock_trylock(lock)) return;
        asyncmail_cpu_relax();
    }
    // Sleep until the word is free, marking it contended so that its holder's unlock wakes one
    // sleeper. A thread that wakes takes the word as contended too: others may still sleep.
    while (__atomic_exchange_n(&lock->_word, 2, __ATOMIC_ACQUIRE) != 0) {
        syscall(SYS_futex, &lock->_word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    }
}

void asyncmail_lock_wake(asyncmail_lock_t *lock) {
    syscall(SYS_futex, &lock->_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#else
// Nothing out of line elsewhere; keeps this translation unit non-empty.
void asyncmail_lock_unused(void) {}
#endif
