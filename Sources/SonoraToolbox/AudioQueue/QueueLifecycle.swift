import Foundation
import SonoraCore
import SonoraFile

/// What the output and the input queue share on the program's side: the checks and the
/// converter made when they are created, errors that name the queue and the call, and the
/// one lock their program-side state is kept under.
protocol QueueLifecycle: AnyObject {
    /// The type in messages: "AudioQueue", "AudioInputQueue".
    static var callPrefix: String { get }
    /// The queue in messages ("queue 3 (ima4 8000 Hz)").
    var name: String { get }
    /// Guards the program-side state (never held across a callback, a codec call or a wait).
    var lock: NSLock { get }
}

extension QueueLifecycle {
    /// An error naming the queue and the call ("AudioQueue.enqueue: queue 3 (…): …").
    func error(_ code: AudioError.Code, _ call: String, _ message: String) -> AudioError {
        AudioError(code, "\(Self.callPrefix).\(call): \(name): \(message)")
    }

    func withLock<Result>(_ body: () throws(AudioError) -> Result) throws(AudioError) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// The form the queue's realtime side holds `format` in (interleaved Float32, same rate and
    /// channels), once `format` is checked ('invalid property value' if it is not a format).
    static func floatForm(of format: StreamFormat, name: String) throws(AudioError) -> StreamFormat {
        do {
            try format.validate()
        } catch {
            throw AudioError(.queueInvalidPropertyValue, "\(callPrefix).init: \(name): \(error.message)")
        }
        return .linearPCM(sampleRate: format.sampleRate, channels: Int(format.channelsPerFrame), sample: .float32)
    }

    /// The queue's codec ('codec not found' naming what was missing: "decoder", "encoder").
    static func converter(from source: StreamFormat, to destination: StreamFormat, name: String, codec: String) throws(AudioError) -> AudioConverter {
        do {
            return try AudioConverter(from: source, to: destination)
        } catch {
            let coded = codec == "decoder" ? source : destination
            throw AudioError(.queueCodecNotFound, "\(callPrefix).init: \(name): no \(codec) for \(coded): \(error.message)")
        }
    }
}

extension AudioQueue: QueueLifecycle {
    static var callPrefix: String { "AudioQueue" }
}

extension AudioInputQueue: QueueLifecycle {
    static var callPrefix: String { "AudioInputQueue" }
}

/// Numbers queues in their names, one sequence per kind.
final class QueueNameCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}

/// A queue's property listeners (AudioQueueAddPropertyListener's registry): tokens handed
/// out in order, removal by token, and the bodies to call for a property. Kept under the
/// queue's lock; called off it.
struct QueueListeners<Queue> {
    typealias Body = (Queue, AudioQueue.Property) -> Void
    private var entries: [AudioQueue.Property: [(id: Int, body: Body)]] = [:]
    private var nextID = 1

    /// Adds `body` for `property`; its token.
    mutating func add(_ property: AudioQueue.Property, _ body: @escaping Body) -> Int {
        defer { nextID += 1 }
        entries[property, default: []].append((nextID, body))
        return nextID
    }

    /// Removes the listener with `token`; false if `property` has none such.
    mutating func remove(_ property: AudioQueue.Property, token: Int) -> Bool {
        guard let index = entries[property]?.firstIndex(where: { $0.id == token }) else { return false }
        entries[property]?.remove(at: index)
        return true
    }

    func bodies(for property: AudioQueue.Property) -> [Body] { entries[property]?.map(\.body) ?? [] }
}
