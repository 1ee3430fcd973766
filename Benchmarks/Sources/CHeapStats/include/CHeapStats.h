#include <stddef.h>

/// Heap bytes currently allocated (glibc's mallinfo2().uordblks); 0 where glibc is absent.
size_t heap_bytes_in_use(void);
