/// Where a property or parameter lives (`AudioUnitScope`), with Core Audio's values.
public enum AudioUnitScope: UInt32, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case global = 0
    case input = 1
    case output = 2
    case group = 3

    public var description: String {
        switch self {
        case .global: "global"
        case .input: "input"
        case .output: "output"
        case .group: "group"
        }
    }
}

/// A bus of a scope (`AudioUnitElement`).
public typealias AudioUnitElement = Int
