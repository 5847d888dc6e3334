import SonoraCore

/// Checks text a user gave as a URI before it reaches lilv or serd: serd refuses an
/// invalid URI with a message on stderr and a null node, and several lilv calls
/// dereference that node (a preset *label* given as a URI crashed `plugins apply`).
public enum LV2URIText {
    /// nil if `text` is an absolute URI (RFC 3986: a scheme, then no spaces, controls or
    /// delimiters serd refuses); otherwise why not.
    public static func problem(_ text: String) -> String? {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
            return "'\(excerpt(text))' is not a URI (no scheme such as http: or file:)"
        }
        let scheme = text[..<colon]
        guard let first = scheme.unicodeScalars.first, first.isASCIILetter,
              scheme.unicodeScalars.allSatisfy({ $0.isASCIILetter || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0) })
        else {
            return "'\(excerpt(text))' is not a URI (its scheme '\(excerpt(String(scheme)))' is not letters, digits, + - .)"
        }
        if let bad = text.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value == 0x7F || "<>\"{}|\\^`".unicodeScalars.contains($0) }) {
            return "'\(excerpt(text))' is not a URI (it holds \(bad.value <= 0x20 ? "a space or control character" : "'\(bad)'"))"
        }
        return nil
    }

    /// Throws `code` with the problem, for user input that must be a URI.
    static func check(_ text: String, what: String, code: AudioError.Code = .invalidPropertyValue) throws(AudioError) {
        if let problem = problem(text) { throw AudioError(code, "\(what): \(problem)") }
    }

    /// At most 80 characters of a value, for messages.
    public static func excerpt(_ text: String) -> String {
        text.count <= 80 ? text : String(text.prefix(77)) + "…"
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}
