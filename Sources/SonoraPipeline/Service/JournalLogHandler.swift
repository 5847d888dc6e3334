import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Log lines for journald (or any syslog-style collector reading stderr): each line starts
/// with the syslog priority in angle brackets (`<3>` error … `<7>` debug, which journald
/// turns into the entry's PRIORITY and strips), carries no timestamp (the journal keeps
/// one) and no terminal escapes. `sonora run` uses it when stderr is not a terminal.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let descriptor: Int32

    /// Writes to `descriptor` (stderr unless a test gives another).
    public init(label: String, descriptor: Int32 = STDERR_FILENO) {
        self.descriptor = descriptor
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// sd-daemon(3)'s prefixes: syslog's numbers for each swift-log level.
    public static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// One entry's text: the prefix, the message (a multi-line message becomes one line per
    /// line, each prefixed, so none lands in the journal at the wrong priority), metadata.
    public static func format(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        let prefix = "<\(priority(of: level))>"
        let fields = metadata.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.enumerated().map { index, line in
            prefix + Self.withoutEscapes(line) + (index == lines.count - 1 ? fields : "")
        }.joined(separator: "\n") + "\n"
    }

    /// ESC and other control bytes (colour codes a message may carry) are dropped.
    static func withoutEscapes(_ text: Substring) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 == "\t" || $0.value >= 0x20 && $0.value != 0x7F }))
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let bytes = Array(Self.format(level: event.level, message: event.message.description, metadata: merged).utf8)
        // One write per entry: lines from several threads never interleave mid-line.
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
