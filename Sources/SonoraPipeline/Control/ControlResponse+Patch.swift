extension ControlResponse {
    /// A plugin's patch parameters, as the `patch` command reports them.
    public struct PatchReading: Codable, Equatable, Sendable {
        public var node: String
        public var properties: [PatchProperty]
    }

    public struct PatchProperty: Codable, Equatable, Sendable {
        public var uri: String
        public var label: String
        /// The URID the appliance maps `uri` to (also accepted as `property`).
        public var urid: UInt32
        /// rdfs:range: the atom type of its value (atom:Float …), if the plugin says.
        public var type: String?
        public var writable: Bool
        public var readable: Bool
        public var minimum: Float?
        public var maximum: Float?
        /// The value the plugin last reported (nil: not known yet).
        public var value: PatchValue?
    }

    /// A patch value on the wire: a number, a flag or a text (strings, paths, URIs).
    public enum PatchValue: Codable, Equatable, Sendable, CustomStringConvertible {
        case number(Double)
        case flag(Bool)
        case text(String)

        public init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let flag = try? container.decode(Bool.self) { self = .flag(flag) }
            else if let number = try? container.decode(Double.self) { self = .number(number) }
            else { self = .text(try container.decode(String.self)) }
        }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .number(let number): try container.encode(number)
            case .flag(let flag): try container.encode(flag)
            case .text(let text): try container.encode(text)
            }
        }

        public var description: String {
            switch self {
            case .number(let number): "\(number)"
            case .flag(let flag): flag ? "true" : "false"
            case .text(let text): text
            }
        }
    }
}
