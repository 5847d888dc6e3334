#ifndef CREFCOUNT_COUNTER_H
#define CREFCOUNT_COUNTER_H
// Counts the Swift reference-count operations (swift_retain, swift_release and their _n and
// bridge-object forms) the calling thread makes between begin and end. Linked only into
// sonora-bench, whose `refcounts` command audits the render paths in a release build: the
// realtime rule forbids retains and releases there, and only optimized code shows which remain.
// It works by defining those runtime entry points in the executable, which binds the program's
// calls to them here; each forwards to the runtime's own (dlsym RTLD_NEXT).

/// 1 if the runtime's entry points were found and the executable's calls reach this counter.
int sonora_refcount_counter_available(void);
/// Starts counting on the calling thread from zero; with may_trap, SONORA_REFCOUNT_TRAP=1 in the
/// environment raises SIGTRAP at the first operation counted (a debugger then shows who).
void sonora_refcount_counter_begin(int may_trap);
/// Stops counting on the calling thread; the retains and the releases seen since begin.
void sonora_refcount_counter_end(long *retains, long *releases);
/// The heap calls (malloc, calloc, realloc, free of a non-null pointer, the aligned forms) the
/// calling thread made in its last begin…end stretch (counted by this file's definitions of
/// them, forwarding to glibc's); SONORA_REFCOUNT_TRAP=2 traps at the first one.
long sonora_refcount_counter_heap_calls(void);
/// 1 if heap calls are counted in this build (not under a sanitizer, whose runtime owns malloc).
int sonora_refcount_counter_heap_available(void);
/// One malloc and one free (the self-check: counted where heap calls are counted).
void sonora_refcount_counter_heap_touch(void);

#endif
