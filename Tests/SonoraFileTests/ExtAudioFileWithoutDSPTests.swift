import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

// This file imports SonoraCore and SonoraFile only, as a ported Core Audio program does:
// it compiles only because the buffer types ExtAudioFile takes are SonoraCore's.
@Suite("ExtAudioFile without the DSP module", .enabled(if: soxPath != nil, "sox is not installed"))
struct ExtAudioFileWithoutDSPTests {
    @Test func readsInt16FramesWithCoreTypesOnly() throws {
        try withTemporaryFolder { folder in
            let source = folder.path("ramp.wav")
            try run(soxPath!, ["-n", "-r", "8000", "-c", "1", "-b", "16", source, "synth", "0.5", "sine", "400", "gain", "-12"])
            let ext = try ExtAudioFile.open(source)
            let client = StreamFormat.linearPCM(sampleRate: 8000, channels: 1, sample: .int16, interleaved: true)
            try ext.setClientFormat(client)
            let buffers = try OwnedPCMBufferList(format: client, frameCapacity: 512)
            var total = 0
            var peak: Int16 = 0
            while true {
                let read = try ext.read(into: buffers.list(frameCount: 512), frameCount: 512)
                if read == 0 { break }
                let samples = buffers.bytes(0).bindMemory(to: Int16.self)
                for index in 0..<read { peak = max(peak, samples[index]) }
                total += read
            }
            #expect(total == 4000)
            // −12 dBFS: 0.251 of full scale.
            #expect(abs(Double(peak) / 32768 - 0.2512) < 0.003, "peak \(peak)")
        }
    }
}
