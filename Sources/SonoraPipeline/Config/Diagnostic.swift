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
