import SonoraCore

/// Identifies a kind of audio unit, as Core Audio's `AudioComponentDescription`:
/// type, subtype and manufacturer as four-character codes.
public struct AudioComponentDescription: Hashable, Sendable, CustomStringConvertible {
    public var type: FourCharCode
    public var subType: FourCharCode
    public var manufacturer: FourCharCode

    public init(type: FourCharCode, subType: FourCharCode, manufacturer: FourCharCode) {
        self.type = type
        self.subType = subType
        self.manufacturer = manufacturer
    }

    /// `auou/genr/appl`.
    public var description: String {
        [type, subType, manufacturer].map { $0.characters ?? String($0.rawValue) }.joined(separator: "/")
    }
}

extension FourCharCode {
    // Component types (AUComponent.h).
    public static let outputUnit: FourCharCode = "auou"
    public static let musicDevice: FourCharCode = "aumu"
    public static let musicEffect: FourCharCode = "aumf"
    public static let formatConverter: FourCharCode = "aufc"
    public static let effect: FourCharCode = "aufx"
    public static let mixer: FourCharCode = "aumx"
    public static let panner: FourCharCode = "aupn"
    public static let generator: FourCharCode = "augn"
    public static let offlineEffect: FourCharCode = "auol"

    // Manufacturers.
    /// Core Audio's own units; Sonora keeps Apple's codes for the units Core Audio has.
    public static let apple: FourCharCode = "appl"
    /// Units that are Sonora's own.
    public static let sonora: FourCharCode = "snra"
}
