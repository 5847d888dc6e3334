import SonoraCore
import SonoraDSP
import Testing

@Suite("Resampler")
struct ResamplerTests {
    @Test func convertsAStreamAndDrainsItsTail() throws {
        let resampler = try Resampler(from: 44100, to: 48000, channels: 2, quality: .high)
        #expect(resampler.delay > 0)
        let input = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 441)
        let output = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 1024)
        for channel in 0..<2 { input.list[channel].update(repeating: 0.25) }
        var produced = 0
        var settled: Float = 0
        for _ in 0..<100 {
            var offset = 0
            while offset < 441 {
                let (consumed, made) = resampler.process(input.list.frames(from: offset, count: 441 - offset), into: output.list)
                offset += consumed
                produced += made
                if made > 0 { settled = output.list[0][made - 1] }
                if consumed == 0 && made == 0 { break }
            }
        }
        var tail = 0
        while true {
            let made = resampler.flush(into: output.list)
            if made == 0 { break }
            tail += made
        }
        // One second in, one second out (the tail drains what the filter held).
        #expect(abs(produced + tail - 48000) <= 2, "produced \(produced) + tail \(tail)")
        // DC passes at its level once the filter has settled.
        #expect(abs(settled - 0.25) < 1e-4, "settled at \(settled)")
        #expect(throws: AudioError.self) { try Resampler(from: 8000, to: 8000 * 300, channels: 1) }
        #expect(throws: AudioError.self) { try Resampler(from: 0, to: 48000, channels: 1) }
    }
}
