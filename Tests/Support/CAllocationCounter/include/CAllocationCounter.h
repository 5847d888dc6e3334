#ifndef CALLOCATION_COUNTER_H
#define CALLOCATION_COUNTER_H
// Counts heap calls (malloc, calloc, realloc, free, the aligned variants) made by
// the calling thread between begin and end. The counter works by defining malloc
// and friends in the test binary, which takes precedence over glibc's.

/// 1 if counting works in this binary (not under a sanitizer that owns malloc).
int sonora_allocation_counter_available(void);
/// Starts counting on the calling thread from zero.
void sonora_allocation_counter_begin(void);
/// Stops counting on the calling thread and returns the number of heap calls seen.
long sonora_allocation_counter_end(void);

#endif
