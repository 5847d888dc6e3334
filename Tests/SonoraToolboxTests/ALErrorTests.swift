import Foundation
import SonoraToolbox
import Testing

/// Every misuse of the API gives its OpenAL error, thrown and kept as the context's sticky
/// error (alGetError: the first one since the last read), and changes nothing.
@Suite("OpenAL: errors", .serialized)
struct ALErrorTests {
    /// Runs `body`, which must throw `expected`; the context must then report it once.
    static func expectError(_ expected: ALError, _ context: ALContext, _ what: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("\(what): no error, expected \(expected.name)")
        } catch {
            #expect(error as? ALError == expected, "\(what): \(error)")
        }
        #expect(context.takeError() == expected, "\(what): sticky error")
        #expect(context.takeError() == nil, "\(what): takeError clears it")
    }

    @Test("invalid values: out-of-range properties are refused and leave the old value")
    func invalidValues() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let context = world.context
        let source = try context.makeSource()
        Self.expectError(.invalidValue, context, "gain −1") { try source.setGain(-1) }
        #expect(source.gain == 1)
        Self.expectError(.invalidValue, context, "pitch 0") { try source.setPitch(0) }
        Self.expectError(.invalidValue, context, "minGain 2") { try source.setMinGain(2) }
        Self.expectError(.invalidValue, context, "maxGain −0.5") { try source.setMaxGain(-0.5) }
        Self.expectError(.invalidValue, context, "cone inner 400°") { try source.setConeInnerAngle(400) }
        Self.expectError(.invalidValue, context, "cone outer −1°") { try source.setConeOuterAngle(-1) }
        Self.expectError(.invalidValue, context, "cone outer gain 1.5") { try source.setConeOuterGain(1.5) }
        Self.expectError(.invalidValue, context, "reference distance −1") { try source.setReferenceDistance(-1) }
        Self.expectError(.invalidValue, context, "rolloff −1") { try source.setRolloffFactor(-1) }
        Self.expectError(.invalidValue, context, "max distance −1") { try source.setMaxDistance(-1) }
        Self.expectError(.invalidValue, context, "position NaN") { try source.setPosition([.nan, 0, 0]) }
        Self.expectError(.invalidValue, context, "doppler factor −1") { try context.setDopplerFactor(-1) }
        #expect(context.dopplerFactor == 1)
        Self.expectError(.invalidValue, context, "speed of sound 0") { try context.setSpeedOfSound(0) }
        Self.expectError(.invalidValue, context, "listener gain −1") { try context.listener.setGain(-1) }
        Self.expectError(.invalidValue, context, "listener orientation zero") { try context.listener.setOrientation(at: .zero, up: [0, 1, 0]) }
        Self.expectError(.invalidValue, context, "alSourcei looping 2") { try source.set(ALSource.Property.looping, 2) }
        // The plain setter records without throwing.
        source.gain = -3
        #expect(source.gain == 1)
        #expect(context.takeError() == .invalidValue)
        // Offsets past the queue, unqueueing more than processed, bad buffer data.
        source.buffer = try world.sine(440, frames: 100)
        Self.expectError(.invalidValue, context, "offset past the end") { try source.setSampleOffset(100) }
        Self.expectError(.invalidValue, context, "negative offset") { try source.setSecondOffset(-1) }
        let buffer = try context.makeBuffer()
        Self.expectError(.invalidValue, context, "frequency 0") {
            try [Float](repeating: 0, count: 4).withUnsafeBytes { bytes in try buffer.setData(bytes, format: .monoFloat32, frequency: 0) }
        }
        Self.expectError(.invalidValue, context, "half a frame") {
            try [UInt8](repeating: 0, count: 3).withUnsafeBytes { bytes in try buffer.setData(bytes, format: .stereo8, frequency: 8000) }
        }
        Self.expectError(.invalidValue, context, "unreadable file") { try buffer.load(contentsOf: URL(fileURLWithPath: "/nonexistent/x.wav")) }
        #expect(context.lastErrorMessage?.contains("/nonexistent/x.wav") == true)
        let stream = try context.makeSource()
        try stream.queue(try world.sine(440, frames: 100))
        Self.expectError(.invalidValue, context, "unqueue unprocessed") { _ = try stream.unqueueBuffers(1) }
        Self.expectError(.invalidValue, context, "unqueue from a static source") { _ = try source.unqueueBuffers(1) }
    }

    @Test("invalid enums: unknown property, format and distance-model values")
    func invalidEnums() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        Self.expectError(.invalidEnum, world.context, "alSourcef 0x1234") { try source.set(0x1234, Float(1)) }
        Self.expectError(.invalidEnum, world.context, "alSource3f AL_GAIN") { try source.set(ALSource.Property.gain, SIMD3<Float>(1, 1, 1)) }
        Self.expectError(.invalidEnum, world.context, "alGetSourcei 0") { _ = try source.integer(0) }
        Self.expectError(.invalidEnum, world.context, "alDistanceModel 0xD009") { try world.context.setDistanceModel(alValue: 0xD009) }
        let buffer = try world.context.makeBuffer()
        Self.expectError(.invalidEnum, world.context, "format 0x1199") {
            try [UInt8](repeating: 0, count: 4).withUnsafeBytes { bytes in try buffer.setData(bytes, alFormat: 0x1199, frequency: 8000) }
        }
        try source.set(ALSource.Property.gain, Float(0.5))
        #expect(try source.float(ALSource.Property.gain) == 0.5)
        try world.context.setDistanceModel(alValue: 0xD003)
        #expect(world.context.distanceModel == .linear)
    }

    @Test("invalid names: deleted sources and buffers, another device's buffer")
    func invalidNames() throws {
        let world = try ALWorld()
        let other = try ALWorld()
        defer { world.destroy(); other.destroy() }
        let context = world.context
        let source = try context.makeSource()
        try source.delete()
        Self.expectError(.invalidName, context, "play a deleted source") { try source.play() }
        Self.expectError(.invalidName, context, "set gain of a deleted source") { try source.setGain(0.5) }
        let live = try context.makeSource()
        Self.expectError(.invalidName, context, "group with a deleted source") { try context.play([live, source]) }
        #expect(live.state == .initial, "nothing of the group changed")
        let buffer = try world.sine(440, frames: 10)
        try buffer.delete()
        Self.expectError(.invalidName, context, "queue a deleted buffer") { try live.queue(buffer) }
        Self.expectError(.invalidName, context, "set data of a deleted buffer") {
            try [Float](repeating: 0, count: 4).withUnsafeBytes { bytes in try buffer.setData(bytes, format: .monoFloat32, frequency: 8000) }
        }
        let foreign = try other.sine(440, frames: 10)
        Self.expectError(.invalidName, context, "another device's buffer") { try live.setBuffer(foreign) }
        let otherSource = try other.context.makeSource()
        Self.expectError(.invalidName, context, "another context's source in a group") { try context.play([otherSource]) }
    }

    @Test("invalid operations: changing what plays, buffers in use, mixed queue formats, a destroyed context")
    func invalidOperations() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let context = world.context
        let source = try context.makeSource()
        let buffer = try world.sine(440, frames: 48000)
        source.buffer = buffer
        try source.play()
        Self.expectError(.invalidOperation, context, "set the buffer while playing") { try source.setBuffer(nil) }
        Self.expectError(.invalidOperation, context, "delete a buffer in use") { try buffer.delete() }
        Self.expectError(.invalidOperation, context, "set data of a buffer in use") {
            try [Float](repeating: 0, count: 4).withUnsafeBytes { bytes in try buffer.setData(bytes, format: .monoFloat32, frequency: 8000) }
        }
        Self.expectError(.invalidOperation, context, "queue on a static source") { try source.queue(try world.sine(440, frames: 10)) }
        let stream = try context.makeSource()
        try stream.queue(try world.sine(440, frames: 10))
        let stereo = try context.makeBuffer()
        try [Int16](repeating: 0, count: 20).withUnsafeBytes { try stereo.setData($0, format: .stereo16, frequency: 48000) }
        Self.expectError(.invalidOperation, context, "queue a stereo buffer after a mono one") { try stream.queue(stereo) }
        Self.expectError(.invalidOperation, context, "queue a buffer at another rate") { try stream.queue(try world.sine(440, frames: 10, frequency: 22050)) }
        try source.stop()
        source.buffer = nil
        try buffer.delete()
        context.destroy()
        #expect(throws: ALError.invalidOperation) { try context.makeSource() }
        #expect(throws: ALError.invalidOperation) { try stream.play() }
        #expect(ALContext.makeCurrent(context) == false)
    }

    @Test("out of memory: more sources than the context's mono + stereo count")
    func outOfMemory() throws {
        let world = try ALWorld(attributes: ALContextAttributes(monoSources: 2, stereoSources: 1))
        defer { world.destroy() }
        for _ in 0..<3 { _ = try world.context.makeSource() }
        Self.expectError(.outOfMemory, world.context, "a fourth source") { _ = try world.context.makeSource() }
    }

    @Test("the sticky error is the first since the last read; bad device and context settings are refused")
    func stickyAndCreation() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        source.gain = -1
        try? source.set(0x1234, Float(1))
        try? source.unqueueBuffers(1)
        #expect(world.context.takeError() == .invalidValue, "the first error stays")
        #expect(world.context.takeError() == nil)
        #expect(throws: ALError.invalidValue) { try ALDevice.loopback(frequency: 48000, channels: 3) }
        #expect(ALDevice.lastError?.contains("3 channels") == true)
        #expect(throws: ALError.invalidValue) { try ALDevice.loopback(frequency: 100, channels: 2) }
        #expect(throws: ALError.invalidValue) { try ALContext(device: world.device, attributes: ALContextAttributes(frequency: 44100)) }
        #expect(throws: ALError.invalidValue) { try ALContext(device: world.device, attributes: ALContextAttributes(monoSources: -1)) }
        #expect(throws: ALError.invalidValue) { try ALDevice.playback("nosuchdriver:xyz") }
        #expect(ALError.invalidName.code == 0xA001 && ALError.outOfMemory.code == 0xA005 && ALError(code: 0xA003) == .invalidValue)
    }
}
