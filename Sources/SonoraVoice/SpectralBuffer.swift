/// Fixed-size Float storage owned by a component of the canceller: allocated and zeroed
/// once, never resized, so the per-frame path touches only raw pointers.
@usableFromInline
struct FloatStorage {
    @usableFromInline let pointer: UnsafeMutablePointer<Float>
    @usableFromInline let count: Int

    init(count: Int) {
        self.count = max(1, count)
        pointer = .allocate(capacity: self.count)
        pointer.initialize(repeating: 0, count: self.count)
    }

    func clear() { pointer.update(repeating: 0, count: count) }
    func free() { pointer.deallocate() }
    subscript(index: Int) -> Float {
        get { pointer[index] }
        nonmutating set { pointer[index] = newValue }
    }
}
