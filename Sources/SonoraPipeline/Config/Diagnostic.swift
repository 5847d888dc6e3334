import Foundation

/// Where something is in a config file (1-based line and column).
public struct SourceLocation: Hashable, Sendable, Codable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }
}

/// One problem found in a config: `file:line:column: message`, like a compiler's.
public struct Diagnostic: Error, Hashable, Sendable, Codable, CustomStringConvertible {
    public var location: SourceLocation
    public var message: String

    public init(_ location: SourceLocation, _ message: String) {
        self.location = location
        self.message = message
    }

    public var description: String { "\(location): \(message)" }

    /// A value as messages quote it: at most 80 characters (a config may hold megabytes
    /// in one scalar; an error must not echo them), control characters escaped.
    public static func excerpt(_ text: String) -> String {
        let short = text.count <= 80 ? text : String(text.prefix(77)) + "…"
        return short.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined()
    }
}

/// Every problem of a config, found in one pass.
public struct ConfigurationErrors: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]

    public init(_ diagnostics: [Diagnostic]) {
        self.diagnostics = diagnostics.sorted { ($0.location.line, $0.location.column) < ($1.location.line, $1.location.column) }
    }

    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// The closest of `candidates` to `word` (edit distance, case-insensitive), if close enough
/// to be what was meant.
func closest(to word: String, in candidates: [String]) -> String? {
    // Suggestions are for typos in names, not for megabytes of text.
    guard word.count <= 64 else { return nil }
    let target = Array(word.lowercased())
    var best: (String, Int)?
    for candidate in candidates {
        let other = Array(candidate.lowercased())
        var previous = Array(0...other.count)
        for (i, a) in target.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: other.count)
            for (j, b) in other.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (a == b ? 0 : 1))
            }
            previous = current
        }
        let distance = previous[other.count]
        if distance <= max(2, target.count / 3), distance < (best?.1 ?? .max) { best = (candidate, distance) }
    }
    return best?.0
}

/// " (did you mean 'x'?)" or nothing.
func suggestion(for word: String, in candidates: [String]) -> String {
    closest(to: word, in: candidates).map { "; did you mean '\($0)'?" } ?? ""
}

/// The first thing in a config's bytes that makes it no text: invalid UTF-8, a NUL or
/// another control character — with its line and column, so the message points at it.
struct TextProblem {
    var line: Int
    var column: Int
    var message: String

    static func find(in data: Data) -> TextProblem? {
        var line = 1, column = 1
        var index = data.startIndex
        while index < data.endIndex {
            let byte = data[index]
            if byte < 0x80 {
                if byte == 0x0A { line += 1; column = 1; index += 1; continue }
                if byte == 0 { return TextProblem(line: line, column: column, message: "a NUL byte: a config is text") }
                if byte < 0x20 && byte != 0x09 && byte != 0x0D || byte == 0x7F {
                    return TextProblem(line: line, column: column, message: "control character 0x\(String(byte, radix: 16, uppercase: true)): a config is text")
                }
                index += 1
                column += 1
                continue
            }
            // A multi-byte UTF-8 sequence: its length from the lead byte, then continuation bytes.
            let length = byte >= 0xF0 && byte <= 0xF4 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC2 && byte <= 0xDF ? 2 : 0
            var valid = length > 0 && data.endIndex - index >= length
            if valid {
                for offset in 1..<length where data[index + offset] & 0xC0 != 0x80 { valid = false }
            }
            if valid, String(data: data[index..<(index + length)], encoding: .utf8) == nil { valid = false }
            guard valid else {
                return TextProblem(line: line, column: column, message: "invalid UTF-8 (byte 0x\(String(byte, radix: 16, uppercase: true))): save the config as UTF-8 text")
            }
            index += length
            column += 1
        }
        return nil
    }
}
