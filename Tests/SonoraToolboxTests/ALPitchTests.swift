import Foundation
import SonoraToolbox
import Testing

/// Pitch and doppler as heard: the frequency of a rendered sine, measured by its zero
/// crossings, against pitch × the §3.5.2 shift — inside the 3D mixer's rate range and
/// beyond it (where the source's voice resamples the rest).
@Suite("OpenAL: pitch and doppler on a loopback render", .serialized)
struct ALPitchTests {
    /// The frequency of the left channel of a one-second render of a 500 Hz sine.
    static func heardFrequency(_ configure: (ALSource, ALContext) throws -> Void) throws -> Double {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        source.buffer = try world.sine(500, frames: 48000)
        source.isLooping = true
        try configure(source, world.context)
        try source.play()
        _ = world.render(9600)  // past the resampler's start
        let left = world.channel(0, of: world.render(48000))
        var crossings = 0
        for index in 1..<left.count where (left[index - 1] < 0) != (left[index] < 0) { crossings += 1 }
        return Double(crossings) / 2
    }

    @Test("pitch 1.5 plays 750 Hz; pitch 3 (beyond the unit's 2) plays 1500 Hz")
    func pitch() throws {
        let half = try Self.heardFrequency { source, _ in source.pitch = 1.5 }
        #expect(abs(half / 750 - 1) < 0.004, "\(half) Hz")
        let triple = try Self.heardFrequency { source, _ in source.pitch = 3 }
        #expect(abs(triple / 1500 - 1) < 0.004, "\(triple) Hz")
    }

    @Test("a source coming at the listener at a tenth of the speed of sound is heard 1/0.9 higher; doppler factor 0 turns it off")
    func doppler() throws {
        let approaching = try Self.heardFrequency { source, _ in
            source.position = [0, 0, -10]
            source.velocity = [0, 0, 34.33]
        }
        #expect(abs(approaching / (500 / 0.9) - 1) < 0.004, "\(approaching) Hz")
        let off = try Self.heardFrequency { source, context in
            context.dopplerFactor = 0
            source.position = [0, 0, -10]
            source.velocity = [0, 0, 34.33]
        }
        #expect(abs(off / 500 - 1) < 0.004, "\(off) Hz")
    }
}
