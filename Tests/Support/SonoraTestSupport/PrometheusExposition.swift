/// A strict reader of Prometheus' text exposition format (0.0.4), for tests that check what
/// `sonora ctl metrics` and the `/metrics` endpoint print: every line must be a valid
/// `# HELP`, `# TYPE`, comment or sample line, each family's TYPE comes before its samples,
/// its samples are contiguous, and no series (name and label set) appears twice.
public struct PrometheusExposition: Sendable {
    public struct Sample: Sendable, Equatable {
        public var name: String
        public var labels: [String: String]
        public var value: Double
    }

    public struct Problem: Error, CustomStringConvertible, Sendable {
        public var line: Int
        public var message: String
        public var text: String
        public var description: String { "line \(line): \(message): \(text)" }
    }

    public var samples: [Sample] = []
    /// TYPE of each family that declared one.
    public var types: [String: String] = [:]
    public var help: [String: String] = [:]

    /// The samples named `name` whose labels include `labels`.
    public func samples(_ name: String, _ labels: [String: String] = [:]) -> [Sample] {
        samples.filter { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }
    }

    /// The one sample's value (nil when there is none or several).
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let found = samples(name, labels)
        return found.count == 1 ? found[0].value : nil
    }

    public init(parsing text: String) throws(Problem) {
        var seenSeries = Set<String>()
        var finishedFamilies = Set<String>()
        var currentFamily: String?
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, raw) in lines.enumerated() {
            let number = index + 1
            let line = String(raw)
            func fail(_ message: String) -> Problem { Problem(line: number, message: message, text: String(line.prefix(200))) }
            if line.isEmpty {
                if index == lines.count - 1 { continue }  // the final newline
                continue
            }
            if line.hasPrefix("#") {
                let words = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
                guard words.count >= 3, words[0] == "#", words[1] == "HELP" || words[1] == "TYPE" else { continue }  // a comment
                let name = String(words[2])
                guard Self.isMetricName(name) else { throw fail("bad metric name in \(words[1])") }
                let rest = words.count > 3 ? String(words[3]) : ""
                if words[1] == "TYPE" {
                    guard ["counter", "gauge", "histogram", "summary", "untyped"].contains(rest) else { throw fail("unknown type '\(rest)'") }
                    guard types[name] == nil else { throw fail("second TYPE line for \(name)") }
                    guard !samples.contains(where: { Self.family(of: $0.name, types: [name: rest]) == name }) else {
                        throw fail("TYPE of \(name) after its samples")
                    }
                    types[name] = rest
                } else {
                    guard help[name] == nil else { throw fail("second HELP line for \(name)") }
                    guard Self.isValidEscaping(rest, allowQuote: false) else { throw fail("bad escape in HELP") }
                    help[name] = rest
                }
                continue
            }
            var scanner = Scanner(line)
            let name = scanner.take { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") }
            guard Self.isMetricName(name) else { throw fail("bad metric name") }
            var labels: [String: String] = [:]
            var labelOrder: [String] = []
            if scanner.peek == "{" {
                scanner.advance()
                while scanner.peek != "}" {
                    let label = scanner.take { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
                    guard Self.isLabelName(label) else { throw fail("bad label name '\(label)'") }
                    guard !label.hasPrefix("__") else { throw fail("reserved label name '\(label)'") }
                    guard scanner.peek == "=" else { throw fail("expected '=' after \(label)") }
                    scanner.advance()
                    guard scanner.peek == "\"" else { throw fail("expected '\"' to open \(label)'s value") }
                    scanner.advance()
                    var value = ""
                    while true {
                        guard let character = scanner.peek else { throw fail("unterminated value of \(label)") }
                        scanner.advance()
                        if character == "\"" { break }
                        if character == "\\" {
                            switch scanner.peek {
                            case "\\": value.append("\\")
                            case "\"": value.append("\"")
                            case "n": value.append("\n")
                            default: throw fail("bad escape in the value of \(label)")
                            }
                            scanner.advance()
                        } else {
                            value.append(character)
                        }
                    }
                    guard labels[label] == nil else { throw fail("label \(label) twice") }
                    labels[label] = value
                    labelOrder.append(label)
                    if scanner.peek == "," { scanner.advance(); continue }
                    guard scanner.peek == "}" else { throw fail("expected ',' or '}' after \(label)'s value") }
                }
                scanner.advance()
            }
            guard scanner.peek == " " else { throw fail("expected one space before the value") }
            scanner.advance()
            let fields = scanner.rest.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 1 || fields.count == 2, let value = Self.value(String(fields[0])) else { throw fail("bad value") }
            if fields.count == 2 { guard Int64(fields[1]) != nil else { throw fail("bad timestamp") } }
            let series = name + "{" + labelOrder.sorted().map { "\($0)=\(labels[$0]!)" }.joined(separator: ",") + "}"
            guard seenSeries.insert(series).inserted else { throw fail("series \(series) twice") }
            let family = Self.family(of: name, types: types)
            if family != currentFamily {
                if let currentFamily { finishedFamilies.insert(currentFamily) }
                guard !finishedFamilies.contains(family) else { throw fail("samples of \(family) are not together") }
                currentFamily = family
            }
            if let type = types[family], type == "counter" || type == "histogram" || type == "summary" {
                guard value >= 0 || value.isNaN else { throw fail("a \(type) cannot be negative") }
            }
            samples.append(Sample(name: name, labels: labels, value: value))
        }
    }

    /// The family a sample belongs to: histograms and summaries add suffixes.
    static func family(of name: String, types: [String: String]) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if let type = types[base], type == "histogram" || type == "summary" { return base }
        }
        return name
    }

    static func isMetricName(_ name: String) -> Bool {
        guard let first = name.first, first.isASCII, first.isLetter || first == "_" || first == ":" else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") }
    }

    static func isLabelName(_ name: String) -> Bool {
        guard let first = name.first, first.isASCII, first.isLetter || first == "_" else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
    }

    static func isValidEscaping(_ text: String, allowQuote: Bool) -> Bool {
        var characters = text.makeIterator()
        while let character = characters.next() {
            if character == "\\" {
                guard let next = characters.next(), next == "\\" || next == "n" || (allowQuote && next == "\"") else { return false }
            }
        }
        return true
    }

    /// A float as the format writes it: decimal or exponent notation, `+Inf`, `-Inf`, `NaN`.
    static func value(_ text: String) -> Double? {
        switch text {
        case "+Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }) else { return nil }
            return Double(text)
        }
    }

    struct Scanner {
        let characters: [Character]
        var index = 0
        init(_ text: String) { characters = Array(text) }
        var peek: Character? { index < characters.count ? characters[index] : nil }
        mutating func advance() { index += 1 }
        mutating func take(while accept: (Character) -> Bool) -> String {
            let start = index
            while index < characters.count && accept(characters[index]) { index += 1 }
            return String(characters[start..<index])
        }
        var rest: String { String(characters[index...]) }
    }
}
