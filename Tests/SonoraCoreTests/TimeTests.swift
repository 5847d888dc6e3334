import SonoraCore
import Testing

@Suite("HostTime and AudioTimeStamp")
struct TimeTests {
    @Test func hostTimeIsMonotonicNanoseconds() {
        let first = HostTime.now
        var spin = 0
        for value in 0..<100_000 { spin &+= value }
        let second = HostTime.now
        #expect(spin != 0)
        #expect(second >= first)
        #expect(HostTime.ticksPerSecond == 1_000_000_000)
        #expect(HostTime(seconds: 1.5).nanoseconds == 1_500_000_000)
        #expect(HostTime(nanoseconds: 2_000_000_000).seconds == 2)
        #expect(HostTime(HostTime(nanoseconds: 3_000_000_007).timespec).rawValue == 3_000_000_007)
    }

    @Test func framesAndNanoseconds() {
        #expect(HostTime.nanoseconds(forFrames: 48000, sampleRate: 48000) == 1_000_000_000)
        #expect(HostTime.nanoseconds(forFrames: 128, sampleRate: 48000) == 2_666_667)
        let start = HostTime(nanoseconds: 1_000_000_000)
        #expect(start.frames(until: start + 500_000_000, sampleRate: 44100) == 22050)
        #expect((start + 10) - start == 10)
        #expect(start - (start + 10) == -10)
    }

    @Test func timeStampsAdvance() {
        let stamp = AudioTimeStamp(sampleTime: 1000, hostTime: HostTime(nanoseconds: 5_000_000_000))
        #expect(stamp.flags == .sampleHostTimeValid)
        let next = stamp.advanced(byFrames: 480, sampleRate: 48000)
        #expect(next.sampleTime == 1480)
        #expect(next.hostTime == 5_010_000_000)
        let sampleOnly = AudioTimeStamp(sampleTime: 7).advanced(byFrames: 3, sampleRate: 48000)
        #expect(sampleOnly.sampleTime == 10 && sampleOnly.hostTime == 0)
        var scaled = stamp
        scaled.rateScalar = 2
        scaled.flags.insert(.rateScalarValid)
        #expect(scaled.advanced(byFrames: 480, sampleRate: 48000).hostTime == 5_005_000_000)
    }
}
