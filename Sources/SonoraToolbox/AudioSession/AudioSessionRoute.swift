/// What a port of the route is (AVAudioSessionPort's kinds that a Linux appliance has).
public enum AudioSessionPortRole: String, Sendable, Hashable, Codable {
    case headphones
    case speaker
    case lineOut
    case hdmi
    case microphone
    case headsetMicrophone
    case lineIn
    /// A device Sonora serves itself (null, offline, in-process loopback, the appliance).
    case virtual
    /// An ALSA device whose controls name no role.
    case unknown
}

/// One device of the route: its name (as the program named it, or the appliance reports it)
/// and its roles (a card with a headphone and a speaker control has both).
public struct AudioSessionPort: Sendable, Hashable, Codable {
    public var name: String
    public var roles: [AudioSessionPortRole]

    public init(name: String, roles: [AudioSessionPortRole]) {
        self.name = name
        self.roles = roles
    }
}

/// Where the session's audio goes and comes from now (kAudioSessionProperty_AudioRoute).
public struct AudioSessionRoute: Sendable, Hashable, Codable {
    public var outputs: [AudioSessionPort]
    public var inputs: [AudioSessionPort]

    public init(outputs: [AudioSessionPort] = [], inputs: [AudioSessionPort] = []) {
        self.outputs = outputs
        self.inputs = inputs
    }
}

/// Why the route changed (kAudioSessionRouteChangeReason_…).
public enum AudioSessionRouteChangeReason: String, Sendable, Hashable, Codable {
    case unknown
    /// A device appeared (came back, was plugged in).
    case newDeviceAvailable
    /// A device went away (vanished, was unplugged).
    case oldDeviceUnavailable
    /// The session's category changed.
    case categoryChange
    /// The route was overridden (the appliance or `sonora ctl` chose another output).
    case override
    /// The system woke from sleep (a suspended device resumed).
    case wakeFromSleep
    /// No route suits the category (e.g. record without any input).
    case noSuitableRouteForCategory

    /// The reason a wire name gives (the appliance's `route_change {reason}`), `.unknown` otherwise.
    public init(wireName: String) {
        self = Self(rawValue: wireName) ?? .unknown
    }
}

/// A route change: why, the route before, and the route after.
public struct AudioSessionRouteChange: Sendable, Hashable {
    public var reason: AudioSessionRouteChangeReason
    public var previousRoute: AudioSessionRoute
    public var currentRoute: AudioSessionRoute

    public init(reason: AudioSessionRouteChangeReason, previousRoute: AudioSessionRoute, currentRoute: AudioSessionRoute) {
        self.reason = reason
        self.previousRoute = previousRoute
        self.currentRoute = currentRoute
    }
}
