import CSonoraSystem
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The netjack slave's cycle reads the clock through the vDSO pointer `sonora_vdso_clock_function`
/// returns, not libc's `clock_gettime`: it must be the same clock.
@Suite struct NetJackClockTests {
    @Test("the vDSO clock function reads CLOCK_MONOTONIC: each of its reads lies between two of libc's")
    func vdsoClockIsMonotonic() throws {
        let clock = try #require(sonora_vdso_clock_function())
        func nanoseconds(_ spec: timespec) -> Int { spec.tv_sec * 1_000_000_000 + spec.tv_nsec }
        var outOfOrder = 0
        var failed = 0
        for _ in 0..<1000 {
            var before = timespec(), read = timespec(), after = timespec()
            clock_gettime(CLOCK_MONOTONIC, &before)
            if clock(CLOCK_MONOTONIC, &read) != 0 { failed += 1 }
            clock_gettime(CLOCK_MONOTONIC, &after)
            if !(nanoseconds(before) <= nanoseconds(read) && nanoseconds(read) <= nanoseconds(after)) { outOfOrder += 1 }
        }
        #expect(failed == 0)
        #expect(outOfOrder == 0)
    }
}
