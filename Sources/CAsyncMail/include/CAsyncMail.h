// The one lock AsyncMail's locks are made of (`RawLock` in the AsyncMail module), in C because
// Swift cannot call the variadic `syscall` that parks a thread on a futex.
//
// Why not `Synchronization.Mutex`: on Linux in Swift 6.3 it is a priority-inheritance futex,
// whose unlock hands the lock to the next sleeper, so under contention every hand-over waits for
// a thread to wake while running threads that could take it spin or sleep (a convoy:
// swiftlang/swift#88440). This lock, like the one that replaced it in the standard library
// (swiftlang/swift#88523) and glibc's own, leaves the word free on unlock and wakes one sleeper:
// a running thread may take it first (barging), and a contended taker spins briefly before it
// sleeps. On Apple platforms it is the OS's unfair lock, which behaves so already.
#ifndef CASYNCMAIL_H
#define CASYNCMAIL_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__APPLE__)
#include <os/lock.h>

typedef struct {
    os_unfair_lock _lock;
} asyncmail_lock_t;

static inline void asyncmail_lock_init(asyncmail_lock_t *lock) { lock->_lock = OS_UNFAIR_LOCK_INIT; }
static inline void asyncmail_lock_lock(asyncmail_lock_t *lock) { os_unfair_lock_lock(&lock->_lock); }
static inline bool asyncmail_lock_trylock(asyncmail_lock_t *lock) { return os_unfair_lock_trylock(&lock->_lock); }
static inline void asyncmail_lock_unlock(asyncmail_lock_t *lock) { os_unfair_lock_unlock(&lock->_lock); }

#elif defined(__linux__)

/// 0: free; 1: held; 2: held, and a thread may sleep on it (its unlock wakes one).
typedef struct {
    uint32_t _word;
} asyncmail_lock_t;

/// The contended half of `asyncmail_lock_lock`: spin briefly, then sleep on the futex.
void asyncmail_lock_lock_contended(asyncmail_lock_t *lock);
/// Wakes one thread sleeping on `lock`.
void asyncmail_lock_wake(asyncmail_lock_t *lock);

static inline void asyncmail_lock_init(asyncmail_lock_t *lock) { __atomic_store_n(&lock->_word, 0, __ATOMIC_RELAXED); }

static inline bool asyncmail_lock_trylock(asyncmail_lock_t *lock) {
    uint32_t expected = 0;
    return __atomic_compare_exchange_n(&lock->_word, &expected, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void asyncmail_lock_lock(asyncmail_lock_t *lock) {
    if (__builtin_expect(asyncmail_lock_trylock(lock), 1)) return;
    asyncmail_lock_lock_contended(lock);
}

static inline void asyncmail_lock_unlock(asyncmail_lock_t *lock) {
    // Leave the word free before waking anyone: a running thread may take it at once.
    if (__builtin_expect(__atomic_exchange_n(&lock->_word, 0, __ATOMIC_RELEASE) == 2, 0)) asyncmail_lock_wake(lock);
}

#else
#include <pthread.h>

typedef struct {
    pthread_mutex_t _mutex;
} asyncmail_lock_t;

static inline void asyncmail_lock_init(asyncmail_lock_t *lock) { pthread_mutex_init(&lock->_mutex, NULL); }
static inline void asyncmail_lock_lock(asyncmail_lock_t *lock) { pthread_mutex_lock(&lock->_mutex); }
static inline bool asyncmail_lock_trylock(asyncmail_lock_t *lock) { return pthread_mutex_trylock(&lock->_mutex) == 0; }
static inline void asyncmail_lock_unlock(asyncmail_lock_t *lock) { pthread_mutex_unlock(&lock->_mutex); }
#endif

/// The innermost delivery frame of the calling thread, or NULL (see `DeliveryScope` in the
/// AsyncMail module): a C thread-local, which Swift cannot declare, read with a few instructions
/// where a thread-specific key took a library call and a lazily made key on every post.
const void *asyncmail_delivery_innermost(void);
/// Makes `frame` the calling thread's innermost delivery frame.
void asyncmail_set_delivery_innermost(const void *frame);

#endif
