#include "CHeapStats.h"
#include <stdlib.h>  // defines __GLIBC__ where glibc is the C library

#if defined(__GLIBC__)
#include <malloc.h>
size_t heap_bytes_in_use(void) { return mallinfo2().uordblks; }
size_t mapped_bytes_in_use(void) { return mallinfo2().hblkhd; }
#else
size_t heap_bytes_in_use(void) { return 0; }
size_t mapped_bytes_in_use(void) { return 0; }
#endif
