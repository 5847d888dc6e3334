import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraUnits
import Testing

/// The file player renders from its decoded copy in memory: sample-exact, looping, and
/// without heap calls. (It also retains nothing per render — it reads a bit-copied view of
/// its storage — which only `sonora-bench refcounts` on a release build counts: the
/// appliance's I/O thread rig plays a player node.)
@Suite("FilePlayerUnit renders its file from memory")
struct FilePlayerUnitTests {
    static func value(frame: Int, channel: Int) -> Float { Float(frame + 1) / 4096 * (channel == 0 ? 1 : -1) }

    @Test("a looping 1000-frame float WAV: every rendered sample is the file's, 256 frames a render, no heap calls")
    func loopsSampleExact() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("numbers.wav")
            let frames = 1000
            let file = try AudioFile.create(path, type: .wave, format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32))
            let source = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
            for channel in 0..<2 {
                for frame in 0..<frames { source.list.samples(channel)[frame] = Self.value(frame: frame, channel: channel) }
            }
            try file.writeFrames(from: source.list)
            try file.close()

            let player = FilePlayerUnit()
            try player.setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .output, element: 0)
            try player.setMaximumFramesPerSlice(256)
            try player.setFile(path)
            player.loops = true
            try player.initialize()
            #expect(player.frameCount == frames)
            let output = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
            var rendered = 0
            var mismatches = 0
            var allocations = 0
            for render in 0..<20 {
                var flags = RenderActionFlags()
                var status = AudioError.Code.noError
                let list = output.list
                let counted = AllocationCounter.count {
                    status = player.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(rendered)), bus: 0, frameCount: 256, into: list)
                }
                if render > 0 { allocations += counted }  // the first may build metadata once
                #expect(status == .noError)
                for channel in 0..<2 {
                    for frame in 0..<256 where list.samples(channel)[frame] != Self.value(frame: (rendered + frame) % frames, channel: channel) {
                        mismatches += 1
                    }
                }
                rendered += 256
            }
            #expect(mismatches == 0)
            if AllocationCounter.isAvailable { #expect(allocations == 0) }
            player.uninitialize()
        }
    }
}
