import Testing
@testable import SonoraToolbox

/// The context is held by nothing weakly (its listener, its buffers and its audio session reach
/// it otherwise): errors still land on it, a destroyed context is still freed, and the session
/// still reaches it.
@Suite("OpenAL context: lifetime and errors without weak references")
struct ALContextLifetimeTests {
    @Test("the listener's and a buffer's errors are recorded on the context, also after destroy")
    func errorsReachTheContext() throws {
        let world = try ALWorld()
        let context = world.context
        let buffer = try context.makeBuffer()
        #expect(throws: ALError.invalidValue) { try [Float](repeating: 0, count: 4).withUnsafeBytes { try buffer.setData($0, format: .monoFloat32, frequency: 0) } }
        #expect(context.takeError() == .invalidValue)
        #expect(throws: ALError.invalidValue) { try context.listener.setGain(-1) }
        #expect(context.takeError() == .invalidValue)
        context.listener.gain = 0.5
        #expect(context.listener.gain == 0.5)
        context.destroy()
        #expect(throws: ALError.invalidOperation) { try context.listener.setPosition([1, 0, 0]) }
        #expect(context.takeError() == .invalidOperation)
        #expect(context.lastErrorMessage == "listener.position: the context is destroyed")
        #expect(context.listener.gain == 0.5, "still readable")
        try buffer.delete()
        #expect(throws: ALError.invalidName) { try buffer.delete() }
        #expect(context.takeError() == .invalidName, "a buffer's error after its context was destroyed")
    }

    @Test("a destroyed context is freed once the program lets go of it (its listener and session link hold it no more)")
    func destroyedContextIsFreed() throws {
        weak var freed: ALContext?
        let device = try ALDevice.loopback(frequency: 48000, channels: 2)
        let listener: ALListener
        do {
            let context = try ALContext(device: device, attributes: ALContextAttributes(monoSources: 2, stereoSources: 1))
            listener = context.listener
            let source = try context.makeSource()
            source.position = [1, 0, 0]
            freed = context
            context.destroy()
        }
        #expect(freed == nil)
        #expect(throws: ALError.invalidOperation) { try listener.setGain(1) }
    }

    @Test("the session holds the context's link while it lives, and lets go at destroy (ALRenderTests covers the interruption itself)")
    func sessionLinkFollowsTheContext() throws {
        let session = AudioSession(backend: LocalAudioSessionBackend())
        try session.setActive(true)
        let world = try inSession(session) { try ALWorld() }
        #expect(session.participantCount == 1)
        world.destroy()
        #expect(session.participantCount == 0)
    }
}
