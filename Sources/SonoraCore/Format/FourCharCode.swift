/// A 32-bit code spelled as four ASCII characters, as Core Audio uses for
/// format IDs, component types and many error statuses (`'lpcm'`, `'fmt?'`).
@frozen
public struct FourCharCode: RawRepresentable, Hashable, Sendable, BitwiseCopyable {
    public var rawValue: UInt32

    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Builds a code from exactly four ASCII characters; returns nil otherwise.
    public init?(characters text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        rawValue = bytes.reduce(0) { ($0 << 8) | UInt32($1) }
    }

    /// The four characters if all are printable ASCII, else nil.
    public var characters: String? {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * UInt32($0))) }
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension FourCharCode: ExpressibleByStringLiteral {
    /// `let code: FourCharCode = "lpcm"`; a literal that is not four ASCII characters is a programming error.
    public init(stringLiteral value: String) {
        guard let code = FourCharCode(characters: value) else {
            preconditionFailure("'\(value)' is not a four-character code")
        }
        self = code
    }
}

extension FourCharCode: CustomStringConvertible {
    /// `'lpcm'` when printable, else the decimal value (as Core Audio's tools print statuses).
    public var description: String {
        characters.map { "'\($0)'" } ?? String(Int32(bitPattern: rawValue))
    }
}
