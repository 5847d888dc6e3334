import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized, .enabled(if: AllocationCounter.isAvailable))
struct AllocationCounterTests {
    @Test("counts a known malloc and free, and nothing for arithmetic")
    func countsKnownAllocations() {
        let calls = AllocationCounter.count {
            let pointer = malloc(64)
            free(pointer)
        }
        #expect(calls == 2)
        var sum = 0
        let none = AllocationCounter.count { for value in 0..<1000 { sum &+= value } }
        #expect(none == 0 && sum == 499_500)
    }

    @Test("a Swift array allocates on this thread; begin/end count across calls")
    func swiftAllocation() {
        let calls = AllocationCounter.count { _ = [Int](repeating: 7, count: Int.random(in: 100...200)) }
        #expect(calls >= 1)
        AllocationCounter.begin()
        free(malloc(16))
        #expect(AllocationCounter.end() == 2)
    }
}
