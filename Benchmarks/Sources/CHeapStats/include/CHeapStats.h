#include <stddef.h>

/// Heap bytes currently allocated (glibc's mallinfo2().uordblks); 0 where glibc is absent.
size_t heap_bytes_in_use(void);
/// Bytes in blocks malloc mapped on their own (large arrays), which `heap_bytes_in_use` leaves out.
size_t mapped_bytes_in_use(void);
