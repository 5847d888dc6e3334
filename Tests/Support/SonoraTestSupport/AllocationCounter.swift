import CAllocationCounter

/// Counts the heap calls (malloc, calloc, realloc, free, the aligned variants) the calling
/// thread makes, through the C counter in `CAllocationCounter` that replaces malloc in the
/// test binary (swift-nio's allocation-counter tests are the model).
///
/// Warm a path up before counting it: its first call may allocate runtime metadata.
public enum AllocationCounter {
    /// False where the counter cannot work (under a sanitizer that owns malloc): skip the
    /// test then, e.g. `.enabled(if: AllocationCounter.isAvailable)`.
    public static var isAvailable: Bool { sonora_allocation_counter_available() != 0 }

    /// The heap calls `body` makes on this thread. Other threads are not counted.
    public static func count(_ body: () throws -> Void) rethrows -> Int {
        sonora_allocation_counter_begin()
        defer { _ = sonora_allocation_counter_end() }
        try body()
        return sonora_allocation_counter_end()
    }

    /// Starts counting on this thread from zero; for counts that span callbacks (begin in
    /// one I/O cycle, `end()` in a later one on the same thread). Allocates nothing.
    @inline(__always)
    public static func begin() { sonora_allocation_counter_begin() }

    /// Stops counting on this thread and returns the calls seen since `begin()`.
    @inline(__always)
    public static func end() -> Int { sonora_allocation_counter_end() }
}
