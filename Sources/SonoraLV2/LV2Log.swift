import CLV2Support
import CLilv
import Logging
import SonoraCore
import Synchronization

/// log:log for one plugin instance. A plugin may log from any thread, its `run()`
/// included, so a message is only formatted (on the stack, in C) and copied into a
/// lock-free ring; `drain()` — called by the host off the realtime thread — passes
/// it on to swift-log. Writers take a try-lock and drop the message when another
/// writer holds it (counted in `droppedCount`), so no writer ever waits.
public final class LV2Log: @unchecked Sendable {
    public struct Message: Hashable, Sendable {
        public var level: Logger.Level
        public var text: String
    }

    let feature: UnsafeMutablePointer<LV2_Log_Log>
    private let handle: UnsafeMutablePointer<SonoraLogHandle>
    private let ring: RecordRing
    private let writing = Atomic<Bool>(false)
    private let dropped = Atomic<Int>(0)
    private let pluginName: String
    private let urids: URIDMap
    private let errorURID, warningURID, traceURID: UInt32
    /// The last messages drained, newest last (at most 64), for hosts and tests to show.
    public private(set) var recent: [Message] = []
    static let logger = Logger(label: "sonora.lv2")

    init(pluginName: String, urids: URIDMap) throws {
        self.pluginName = pluginName
        self.urids = urids
        errorURID = urids.map(LV2URI.logError)
        warningURID = urids.map(LV2URI.logWarning)
        traceURID = urids.map(LV2URI.logTrace)
        ring = try RecordRing(capacity: 64 * 1024)
        feature = .allocate(capacity: 1)
        handle = .allocate(capacity: 1)
        handle.initialize(to: SonoraLogHandle(sink: { context, type, text, length in
            guard let context else { return }
            Unmanaged<LV2Log>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.write(type: type, text: text, length: Int(length)) }
        }, context: Unmanaged.passUnretained(self).toOpaque()))
        sonora_lv2_log_init(feature, handle)
    }

    deinit {
        feature.deallocate()
        handle.deallocate()
    }

    private func write(type: UInt32, text: UnsafePointer<CChar>?, length: Int) {
        guard writing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        if !ring.push(tag: type, text, count: length) { dropped.add(1, ordering: .relaxed) }
        writing.store(false, ordering: .releasing)
    }

    /// Messages lost because the ring was full or another thread was writing.
    public var droppedCount: Int { dropped.load(ordering: .relaxed) }

    /// Passes pending messages to swift-log (label `sonora.lv2`). Not for the realtime thread.
    @discardableResult
    public func drain() -> [Message] {
        var drained: [Message] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let record = buffer.withUnsafeMutableBytes { ring.pop(into: $0.baseAddress!, capacity: $0.count) }
            guard let record else { break }
            var text = Substring(String(decoding: buffer[0..<min(record.count, buffer.count)], as: UTF8.self))
            while let last = text.last, last.isNewline { text = text.dropLast() }
            let level: Logger.Level =
                record.tag == errorURID ? .error : record.tag == warningURID ? .warning
                : record.tag == traceURID ? .trace : .info
            drained.append(Message(level: level, text: String(text)))
            Self.logger.log(level: level, "\(pluginName): \(text)")
        }
        recent.append(contentsOf: drained)
        if recent.count > 64 { recent.removeFirst(recent.count - 64) }
        return drained
    }
}

