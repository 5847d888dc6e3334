import SonoraCore

/// The wire protocol's JSON: one object per line. A small strict parser (RFC 8259, depth
/// at most 64) and a writer with sorted keys, so the HAL needs no Foundation. Control
/// side only.
public enum ApplianceJSON {
    static let maximumDepth = 64

    /// Parses one line into an object; the error says what is wrong and at which byte.
    public static func parseObject(_ bytes: some Collection<UInt8>) throws(AudioError) -> [String: ApplianceValue] {
        var parser = Parser(bytes: Array(bytes))
        let value = try parser.document()
        guard case .object(let object) = value else {
            throw AudioError(.parameterError, "malformed JSON: a request is one JSON object per line, not \(value.kindName)")
        }
        return object
    }

    /// One line of JSON (no trailing newline).
    public static func serialize(_ value: ApplianceValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(value, into: &out)
        return out
    }

    static func serialize(_ object: [String: ApplianceValue]) -> [UInt8] { serialize(.object(object)) }

    private static func write(_ value: ApplianceValue, into out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .int(let number): out += Array(String(number).utf8)
        case .double(let number):
            // JSON has no NaN or infinity.
            out += Array((number.isFinite ? (number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) + ".0" : String(number)) : "null").utf8)
        case .string(let text): writeString(text, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            for (index, key) in fields.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(fields[key]!, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20, 0x7F:
                out += Array("\\u00".utf8) + [hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 15)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        var depth = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func fail(_ what: String) -> AudioError {
            AudioError(.parameterError, "malformed JSON at byte \(index + 1): \(what)")
        }

        mutating func document() throws(AudioError) -> ApplianceValue {
            skipSpace()
            let value = try parseValue()
            skipSpace()
            guard index == bytes.count else { throw fail("unexpected text after the value") }
            return value
        }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func parseValue() throws(AudioError) -> ApplianceValue {
            guard index < bytes.count else { throw fail("unexpected end of line") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try parseObject()
            case UInt8(ascii: "["): return try parseArray()
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
            default: throw fail("unexpected character '\(Self.shown(bytes[index]))'")
            }
        }

        static func shown(_ byte: UInt8) -> String {
            byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
        }

        mutating func literal(_ word: String) throws(AudioError) {
            let expected = Array(word.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw fail("expected '\(word)'")
            }
            index += expected.count
        }

        mutating func enter() throws(AudioError) {
            depth += 1
            if depth > ApplianceJSON.maximumDepth { throw fail("nested deeper than \(ApplianceJSON.maximumDepth) levels") }
        }

        mutating func parseObject() throws(AudioError) -> ApplianceValue {
            try enter()
            index += 1
            var fields: [String: ApplianceValue] = [:]
            skipSpace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return .object(fields)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a field name in quotes") }
                let key = try parseString()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':' after field name '\(key)'") }
                index += 1
                skipSpace()
                guard fields[key] == nil else { throw fail("field '\(key)' appears twice") }
                fields[key] = try parseValue()
                skipSpace()
                guard index < bytes.count else { throw fail("unterminated object (missing '}')") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; break }
                throw fail("expected ',' or '}' in an object")
            }
            depth -= 1
            return .object(fields)
        }

        mutating func parseArray() throws(AudioError) -> ApplianceValue {
            try enter()
            index += 1
            var items: [ApplianceValue] = []
            skipSpace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(items)
            }
            while true {
                skipSpace()
                items.append(try parseValue())
                skipSpace()
                guard index < bytes.count else { throw fail("unterminated array (missing ']')") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; break }
                throw fail("expected ',' or ']' in an array")
            }
            depth -= 1
            return .array(items)
        }

        mutating func parseString() throws(AudioError) -> String {
            index += 1
            var out: [UInt8] = []
            while true {
                guard index < bytes.count else { throw fail("unterminated string") }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: out, as: UTF8.self) else { throw fail("a string is not valid UTF-8") }
                    return text
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw fail("unterminated escape") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
                    case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
                    case UInt8(ascii: "/"): out.append(UInt8(ascii: "/"))
                    case UInt8(ascii: "b"): out.append(8)
                    case UInt8(ascii: "f"): out.append(12)
                    case UInt8(ascii: "n"): out.append(10)
                    case UInt8(ascii: "r"): out.append(13)
                    case UInt8(ascii: "t"): out.append(9)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                                throw fail("a lone UTF-16 surrogate in a \\u escape")
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw fail("a lone UTF-16 surrogate in a \\u escape") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = UnicodeScalar(scalar) else { throw fail("a lone UTF-16 surrogate in a \\u escape") }
                        out += Array(String(Character(unicode)).utf8)
                    default: throw fail("unknown escape '\\\(Self.shown(escape))'")
                    }
                case 0..<0x20: throw fail("a control character inside a string (escape it)")
                default: out.append(byte)
                }
            }
        }

        mutating func hex4() throws(AudioError) -> UInt32 {
            guard bytes.count - index >= 4 else { throw fail("a \\u escape needs four hex digits") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw fail("a \\u escape needs four hex digits")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        mutating func parseNumber() throws(AudioError) -> ApplianceValue {
            let start = index
            var isInteger = true
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw fail("a number needs digits") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw fail("a number needs digits after '.'") }
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw fail("a number needs digits in its exponent") }
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, let number = Int(text) { return .int(number) }
            guard let number = Double(text), number.isFinite else { throw fail("number \(text) is out of range") }
            return .double(number)
        }
    }
}
