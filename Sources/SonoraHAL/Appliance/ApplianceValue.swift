import SonoraCore

/// One JSON value of the appliance's wire protocol. The HAL has no Foundation, and the
/// protocol's lines are small: this type and `ApplianceJSON` are all it needs.
public enum ApplianceValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case array([ApplianceValue])
    case object([String: ApplianceValue])
    case null

    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
    public var intValue: Int? {
        switch self {
        case .int(let value): value
        case .double(let value) where value.rounded() == value && abs(value) < 9e15: Int(value)
        default: nil
        }
    }
    public var doubleValue: Double? {
        switch self {
        case .double(let value): value
        case .int(let value): Double(value)
        default: nil
        }
    }
    public var boolValue: Bool? { if case .bool(let value) = self { value } else { nil } }
    public var arrayValue: [ApplianceValue]? { if case .array(let value) = self { value } else { nil } }
    public var objectValue: [String: ApplianceValue]? { if case .object(let value) = self { value } else { nil } }

    /// The JSON name of the value's kind, for error messages.
    var kindName: String {
        switch self {
        case .string: "a string"
        case .int: "an integer"
        case .double: "a number"
        case .bool: "a boolean"
        case .array: "an array"
        case .object: "an object"
        case .null: "null"
        }
    }
}

extension ApplianceValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
}

/// Typed reads of a request's or reply's fields, each failing with a message that names
/// the op and the field.
extension Dictionary where Key == String, Value == ApplianceValue {
    func requiredString(_ key: String, in op: String) throws(AudioError) -> String {
        guard let value = self[key] else { throw AudioError(.parameterError, "\(op): missing field '\(key)' (a string)") }
        guard let string = value.stringValue else { throw AudioError(.parameterError, "\(op): field '\(key)' must be a string, not \(value.kindName)") }
        return string
    }

    func requiredInt(_ key: String, in op: String) throws(AudioError) -> Int {
        guard let value = self[key] else { throw AudioError(.parameterError, "\(op): missing field '\(key)' (an integer)") }
        guard let number = value.intValue else { throw AudioError(.parameterError, "\(op): field '\(key)' must be an integer, not \(value.kindName)") }
        return number
    }

    func optionalString(_ key: String, in op: String) throws(AudioError) -> String? {
        guard let value = self[key], value != .null else { return nil }
        guard let string = value.stringValue else { throw AudioError(.parameterError, "\(op): field '\(key)' must be a string, not \(value.kindName)") }
        return string
    }
}
