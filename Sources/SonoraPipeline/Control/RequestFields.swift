import Foundation
import SonoraUnits

/// Any JSON object key.
struct FieldKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Typed, checked access to a request's fields: each reader refuses null, the wrong JSON
/// type and (for numbers) non-integers and out-of-range values, naming the field.
struct RequestFields {
    let container: KeyedDecodingContainer<FieldKey>

    init(_ container: KeyedDecodingContainer<FieldKey>) { self.container = container }

    func contains(_ name: String) -> Bool { container.contains(FieldKey(name)) }

    func refuseUnknown(allowed: [String], command: ControlCommand) throws {
        for key in container.allKeys where !allowed.contains(key.stringValue) {
            let name = Diagnostic.excerpt(key.stringValue)
            let others = allowed.filter { $0 != "cmd" && $0 != "version" }
            let takes = others.isEmpty ? "takes no fields" : "takes \(others.joined(separator: ", "))"
            throw ControlFailure(.unknownField, field: key.stringValue, "\(command.name) has no field '\(name)'\(suggestion(for: String(key.stringValue.prefix(64)), in: others)) (\(command.name) \(takes))")
        }
    }

    /// What JSON type a field holds, for messages.
    func kind(_ name: String) -> String {
        let key = FieldKey(name)
        if (try? container.decodeNil(forKey: key)) == true { return "null" }
        if (try? container.decode(Bool.self, forKey: key)) != nil { return "a boolean" }
        if let text = try? container.decode(String.self, forKey: key) { return "a string (\"\(Diagnostic.excerpt(text))\")" }
        if let number = try? container.decode(Double.self, forKey: key) { return "the number \(number)" }
        if (try? container.nestedUnkeyedContainer(forKey: key)) != nil { return "an array" }
        if (try? container.nestedContainer(keyedBy: FieldKey.self, forKey: key)) != nil { return "an object" }
        return "a number too large for a double"
    }

    private func refuseNull(_ name: String, _ expected: String) throws {
        if try container.decodeNil(forKey: FieldKey(name)) {
            throw ControlFailure(.badField, field: name, "\"\(name)\" must be \(expected), not null")
        }
    }

    func string(_ name: String) throws -> String? {
        guard contains(name) else { return nil }
        try refuseNull(name, "a string")
        guard let text = try? container.decode(String.self, forKey: FieldKey(name)) else {
            throw ControlFailure(.badField, field: name, "\"\(name)\" must be a string, not \(kind(name))")
        }
        return text
    }

    func requiredString(_ name: String) throws -> String {
        guard let text = try string(name) else { throw ControlFailure(.missingField, field: name, "missing \"\(name)\"") }
        return text
    }

    func boolean(_ name: String) throws -> Bool? {
        guard contains(name) else { return nil }
        try refuseNull(name, "true or false")
        guard let flag = try? container.decode(Bool.self, forKey: FieldKey(name)) else {
            throw ControlFailure(.badField, field: name, "\"\(name)\" must be true or false, not \(kind(name))")
        }
        return flag
    }

    /// A whole number in `range`: "1", 1.5, [1], null and 2^63 are all refused.
    func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard contains(name) else { return nil }
        let expected = "a whole number \(range.upperBound == Int.max ? "≥ \(range.lowerBound)" : "in \(range.lowerBound)…\(range.upperBound)")"
        try refuseNull(name, expected)
        let key = FieldKey(name)
        if let value = try? container.decode(Int.self, forKey: key) {
            guard range.contains(value) else { throw ControlFailure(.outOfRange, field: name, "\"\(name)\" must be \(expected), not \(value)") }
            return value
        }
        if let number = try? container.decode(Double.self, forKey: key) {
            let problem = number.rounded() == number ? "out of range" : "not a whole number"
            throw ControlFailure(number.rounded() == number ? .outOfRange : .badField, field: name, "\"\(name)\" must be \(expected); \(number) is \(problem)")
        }
        throw ControlFailure(.badField, field: name, "\"\(name)\" must be \(expected), not \(kind(name))")
    }

    /// A finite number.
    func number(_ name: String) throws -> Double? {
        guard contains(name) else { return nil }
        try refuseNull(name, "a number")
        guard let value = try? container.decode(Double.self, forKey: FieldKey(name)) else {
            throw ControlFailure(.badField, field: name, "\"\(name)\" must be a number, not \(kind(name))")
        }
        guard value.isFinite else { throw ControlFailure(.badField, field: name, "\"\(name)\" must be a finite number") }
        return value
    }

    func selector() throws -> ControlRequest.ParameterSelector {
        let node = try requiredString("node")
        let parameter: ControlRequest.ParameterName
        let key = FieldKey("param")
        try refuseNull("param", "a name or a numeric ID")
        if let id = try? container.decode(Int.self, forKey: key) {
            guard let id = UInt32(exactly: id) else {
                throw ControlFailure(.outOfRange, field: "param", "\"param\" ID must be in 0…\(UInt32.max), not \(id)")
            }
            parameter = .id(id)
        } else if let name = try? container.decode(String.self, forKey: key) {
            guard !name.isEmpty else { throw ControlFailure(.badField, field: "param", "\"param\" is empty") }
            parameter = .name(name)
        } else {
            throw ControlFailure(.badField, field: "param", "\"param\" must be a name or a whole-number ID, not \(kind("param"))")
        }
        var scope: AudioUnitScope?
        if let name = try string("scope") {
            let names = AudioUnitScope.allCases.map(\.description)
            guard let found = AudioUnitScope.allCases.first(where: { $0.description == name.lowercased() }) else {
                throw ControlFailure(.badField, field: "scope", "\"scope\" must be one of \(names.joined(separator: ", ")), not '\(Diagnostic.excerpt(name))'\(suggestion(for: String(name.prefix(64)), in: names))")
            }
            scope = found
        }
        let element = try integer("element", in: 0...Int(UInt32.max))
        return ControlRequest.ParameterSelector(node: node, parameter: parameter, scope: scope, element: element)
    }

    func value() throws -> ControlValue {
        let key = FieldKey("value")
        try refuseNull("value", "a number, a text such as \"-6 dB\", or true/false")
        if let flag = try? container.decode(Bool.self, forKey: key) { return .flag(flag) }
        if let text = try? container.decode(String.self, forKey: key) { return .text(text) }
        if let number = try? container.decode(Double.self, forKey: key) { return try ControlValue.number(number).get() }
        throw ControlFailure(.badField, field: "value", "\"value\" must be a number, a text such as \"-6 dB\", or true/false, not \(kind("value"))")
    }

    func property(settable: Bool) throws -> ControlProperty {
        let name = try requiredString("property")
        let choices = settable ? ControlProperty.settable : ControlProperty.allCases
        guard let property = ControlProperty(rawValue: name.lowercased()), choices.contains(property) else {
            let names = choices.map(\.rawValue)
            let what = settable ? "settable properties" : "properties"
            throw ControlFailure(.unknownProperty, field: "property", "no property '\(Diagnostic.excerpt(name))'\(suggestion(for: String(name.prefix(64)), in: names)) (\(what): \(names.joined(separator: ", ")))")
        }
        return property
    }
}
