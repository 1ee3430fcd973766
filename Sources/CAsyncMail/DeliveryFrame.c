#include "CAsyncMail.h"

// One pointer per thread, no destructor: it points at a frame on the thread's own stack while
// the thread delivers, and is NULL otherwise.
static _Thread_local const void *asyncmail_innermost_frame;

const void *asyncmail_delivery_innermost(void) { return asyncmail_innermost_frame; }

void asyncmail_set_delivery_innermost(const void *frame) { asyncmail_innermost_frame = frame; }
