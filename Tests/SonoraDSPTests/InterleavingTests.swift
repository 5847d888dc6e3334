import SonoraDSP
import Testing

@Suite("Interleaving")
struct InterleavingTests {
    @Test(arguments: [1, 2, 3, 6], [0, 1, 3, 4, 5, 63, 64, 65])
    func roundTripsAgainstTheObviousLoop(channels: Int, frames: Int) {
        let interleaved = (0..<channels * frames).map { Float($0) + 0.5 }
        var split = Array(repeating: [Float](repeating: -1, count: frames + 1), count: channels)
        interleaved.withUnsafeBufferPointer { source in
            let pointers = (0..<channels).map { channel in split[channel].withUnsafeMutableBufferPointer { $0.baseAddress! } }
            Interleaving.deinterleave(source.baseAddress!, channels: channels, frames: frames) { pointers[$0] }
        }
        for channel in 0..<channels {
            #expect(Array(split[channel].prefix(frames)) == (0..<frames).map { interleaved[$0 * channels + channel] })
            #expect(split[channel][frames] == -1)  // nothing written past the end
        }
        var back = [Float](repeating: -1, count: channels * frames + 1)
        back.withUnsafeMutableBufferPointer { destination in
            let pointers = (0..<channels).map { channel in split[channel].withUnsafeBufferPointer { $0.baseAddress! } }
            Interleaving.interleave(channels: channels, frames: frames, from: { pointers[$0] }, into: destination.baseAddress!)
        }
        #expect(Array(back.prefix(channels * frames)) == interleaved)
        #expect(back[channels * frames] == -1)
    }
}
